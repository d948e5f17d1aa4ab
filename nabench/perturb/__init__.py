"""Builders, one module per perturbation, registered by kind."""

from typing import Any

from nabench.core.rng import item_rng
from nabench.perturb._base import KNOWN_NA_TEXTS, Builder, InsertsText, slug
from nabench.perturb.all_of_the_above import AllOfTheAbove
from nabench.perturb.foreign_key import ForeignKey
from nabench.perturb.na_distractor import NADistractor
from nabench.perturb.na_keyed import NAKeyed
from nabench.perturb.na_keyed_last import NAKeyedLast
from nabench.perturb.na_mixed import NAMixed
from nabench.perturb.original import Original
from nabench.schemas.columns import ItemColumns, LabelColumns

# The variants, in the order their rules run and a card lists them.
BUILDERS: dict[str, type[Builder]] = {
    b.kind: b
    for b in (Original, NAKeyed, NAKeyedLast, ForeignKey, NADistractor, NAMixed, AllOfTheAbove)
}


def builders_for(spec: Any) -> list[Builder]:
    """The builders a recipe's variant spec asks for: its builder class reads it (and may
    hand it on: `na_keyed` with `position: last` makes `na_keyed_last` configs)."""
    return BUILDERS[str(spec.kind)].from_spec(spec)


__all__ = [
    "BUILDERS",
    "KNOWN_NA_TEXTS",
    "AllOfTheAbove",
    "Builder",
    "ForeignKey",
    "InsertsText",
    "ItemColumns",
    "LabelColumns",
    "NADistractor",
    "NAKeyed",
    "NAKeyedLast",
    "NAMixed",
    "Original",
    "builders_for",
    "item_rng",
    "slug",
]
