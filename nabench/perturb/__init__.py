"""Builders, one module per perturbation, registered by kind."""

from typing import Any

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


def builders_for(spec: Any) -> list[Builder]:
    """The builders a recipe's variant spec asks for, by its kind (`na_keyed` with
    `position: last` is its own builder); each builder class reads its own spec."""
    last = spec.kind == "na_keyed" and getattr(spec, "position", None) == "last"
    return BUILDERS["na_keyed_last" if last else str(spec.kind)].from_spec(spec)


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
    "builders_for",
    "item_rng",
    "slug",
]
