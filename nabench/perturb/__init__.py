"""Builders, one module per perturbation, registered by kind."""

from nabench.perturb._base import Builder, slug
from nabench.perturb._columns import ItemColumns, LabelColumns
from nabench.perturb.all_of_the_above import AllOfTheAbove
from nabench.perturb.na_distractor import NADistractor
from nabench.perturb.na_keyed import NAKeyed
from nabench.perturb.original import Original
from nabench.perturb.rng import item_rng

BUILDERS: dict[str, type[Builder]] = {
    b.kind: b for b in (Original, NAKeyed, NADistractor, AllOfTheAbove)
}

__all__ = [
    "BUILDERS",
    "AllOfTheAbove",
    "Builder",
    "ItemColumns",
    "LabelColumns",
    "NADistractor",
    "NAKeyed",
    "Original",
    "item_rng",
    "slug",
]
