"""The self-knowledge taxonomy (types of self-knowledge and reasons for infeasibility).

The data lives in ``taxonomy.yaml`` next to this module. Names are matched after
:func:`normalise_reason` (case, whitespace and punctuation are ignored), against each entry's
canonical name, id and aliases. Text that matches nothing is *unknown*: lookups return ``None``
and callers keep the original text rather than failing.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from nabench.core.errors import NabenchError

_SEPARATORS = re.compile(r"[\W_]+")


def normalise_reason(text: object) -> str:
    """Fold ``text`` to a matching key: casefolded, punctuation and whitespace runs → one space.

    ``None``, NaN and blank strings give ``""``. Used for reason and type names alike.

    >>> normalise_reason("  Vague/Open-Ended ")
    'vague open ended'
    """
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    folded = unicodedata.normalize("NFKC", str(text)).casefold()
    return _SEPARATORS.sub(" ", folded).strip()


@dataclass(frozen=True)
class Reason:
    """One reason why a task is infeasible, belonging to exactly one type."""

    id: str
    name: str
    type_id: str
    description: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelfKnowledgeType:
    """One type of self-knowledge with its reasons for infeasibility."""

    id: str
    name: str
    description: str
    near_boundary_feasible: str
    reasons: tuple[Reason, ...]
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Taxonomy:
    """A versioned set of self-knowledge types; lookups by name, id or alias."""

    version: str
    types: tuple[SelfKnowledgeType, ...]
    _reason_index: dict[str, Reason] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )
    _type_index: dict[str, SelfKnowledgeType] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        for sk_type in self.types:
            for key in _keys(sk_type.id, sk_type.name, sk_type.aliases):
                _add_unique(self._type_index, key, sk_type, "type")
            for reason in sk_type.reasons:
                for key in _keys(reason.id, reason.name, reason.aliases):
                    _add_unique(self._reason_index, key, reason, "reason")

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """All reasons, in taxonomy order."""
        return tuple(reason for sk_type in self.types for reason in sk_type.reasons)

    def find_reason(self, text: object) -> Reason | None:
        """The reason named by ``text`` (name, id or alias), or ``None`` if unknown or blank."""
        return self._reason_index.get(normalise_reason(text))

    def find_type(self, text: object) -> SelfKnowledgeType | None:
        """The type named by ``text`` (name, id or alias), or ``None`` if unknown or blank."""
        return self._type_index.get(normalise_reason(text))

    def type_by_id(self, type_id: str) -> SelfKnowledgeType:
        """The type with id ``type_id``; raises ``KeyError`` if there is none."""
        for sk_type in self.types:
            if sk_type.id == type_id:
                return sk_type
        raise KeyError(type_id)

    def reason_to_type(self, text: object) -> SelfKnowledgeType | None:
        """The type a reason belongs to, or ``None`` if the reason is unknown or blank."""
        reason = self.find_reason(text)
        return None if reason is None else self.type_by_id(reason.type_id)


def _keys(identifier: str, name: str, aliases: tuple[str, ...]) -> set[str]:
    return {normalise_reason(text) for text in (identifier, name, *aliases)} - {""}


def _add_unique(
    index: dict[str, Any], key: str, value: Reason | SelfKnowledgeType, kind: str
) -> None:
    existing = index.get(key)
    if existing is not None and existing.id != value.id:
        raise NabenchError(
            f"taxonomy: {kind} name {key!r} is used by both {existing.id!r} and {value.id!r}"
        )
    index[key] = value


def _text_list(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise NabenchError(f"taxonomy: {where} must be a list of strings")
    return tuple(value)


def _required_text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise NabenchError(f"taxonomy: {where} needs a non-empty string {key!r}")
    return value.strip()


def _parse(data: object) -> Taxonomy:
    if not isinstance(data, dict) or not isinstance(data.get("types"), list):
        raise NabenchError("taxonomy: expected a mapping with 'version' and a list of 'types'")
    version = data.get("version")
    if not isinstance(version, str) or not version:
        raise NabenchError("taxonomy: 'version' must be a non-empty string")
    types: list[SelfKnowledgeType] = []
    for t_index, raw_type in enumerate(data["types"]):
        if not isinstance(raw_type, dict):
            raise NabenchError(f"taxonomy: types[{t_index}] must be a mapping")
        where = f"types[{t_index}]"
        type_id = _required_text(raw_type, "id", where)
        raw_reasons = raw_type.get("reasons")
        if not isinstance(raw_reasons, list) or not raw_reasons:
            raise NabenchError(f"taxonomy: type {type_id!r} needs a non-empty list 'reasons'")
        reasons: list[Reason] = []
        for r_index, raw_reason in enumerate(raw_reasons):
            r_where = f"type {type_id!r} reasons[{r_index}]"
            if not isinstance(raw_reason, dict):
                raise NabenchError(f"taxonomy: {r_where} must be a mapping")
            reasons.append(
                Reason(
                    id=_required_text(raw_reason, "id", r_where),
                    name=_required_text(raw_reason, "name", r_where),
                    type_id=type_id,
                    description=_required_text(raw_reason, "description", r_where),
                    aliases=_text_list(raw_reason.get("aliases"), f"{r_where} aliases"),
                )
            )
        types.append(
            SelfKnowledgeType(
                id=type_id,
                name=_required_text(raw_type, "name", where),
                description=_required_text(raw_type, "description", where),
                near_boundary_feasible=_required_text(raw_type, "near_boundary_feasible", where),
                reasons=tuple(reasons),
                aliases=_text_list(raw_type.get("aliases"), f"{where} aliases"),
            )
        )
    return Taxonomy(version=version, types=tuple(types))


@cache
def _bundled() -> Taxonomy:
    text = files("nabench.selfknow").joinpath("taxonomy.yaml").read_text(encoding="utf-8")
    return _parse(yaml.safe_load(text))


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load the taxonomy from ``path``, or the one bundled with nabench when ``path`` is None.

    Raises :class:`~nabench.core.errors.NabenchError` for an unreadable or malformed file.
    """
    if path is None:
        return _bundled()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        message = " ".join(str(exc).split())
        raise NabenchError(f"cannot read taxonomy {path}: {message}") from exc
    return _parse(data)


def reason_to_type(text: object, taxonomy: Taxonomy | None = None) -> SelfKnowledgeType | None:
    """The type a reason belongs to (bundled taxonomy by default); ``None`` if unknown/blank."""
    return (taxonomy or load_taxonomy()).reason_to_type(text)
