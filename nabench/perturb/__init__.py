"""Builders, one module per perturbation, registered by kind."""

from nabench.core.rng import item_rng
from nabench.perturb._base import KNOWN_NA_TEXTS, Builder, slug
from nabench.perturb.all_of_the_above import AllOfTheAbove
from nabench.perturb.foreign_key import ForeignKey
from nabench.perturb.na_distractor import NADistractor
from nabench.perturb.na_keyed import NAKeyed
from nabench.perturb.na_keyed_last import NAKeyedLast
from nabench.perturb.na_mixed import NAMixed
from nabench.perturb.original import Original
from nabench.schemas.columns import ItemColumns, LabelColumns

BUILDERS: dict[str, type[Builder]] = {
    b.kind: b
    for b in (Original, NAKeyed, NAKeyedLast, NADistractor, NAMixed, AllOfTheAbove, ForeignKey)
}

__all__ = [
    "BUILDERS",
    "KNOWN_NA_TEXTS",
    "AllOfTheAbove",
    "Builder",
    "ForeignKey",
    "ItemColumns",
    "LabelColumns",
    "NADistractor",
    "NAKeyed",
    "NAKeyedLast",
    "NAMixed",
    "Original",
    "item_rng",
    "slug",
]
