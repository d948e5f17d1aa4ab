"""MMLU subject → category (stem, humanities, social_sciences, other), loaded from YAML."""

from __future__ import annotations

import difflib
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import Final

import yaml

from nabench.core.errors import NabenchError

__all__ = ["MMLU_CATEGORIES", "UnknownSubjectError", "mmlu_category", "mmlu_subject_categories"]

MMLU_CATEGORIES: Final = ("stem", "humanities", "social_sciences", "other")


class UnknownSubjectError(NabenchError, ValueError):
    """A subject name that is not one of the 57 MMLU subjects."""


@cache
def mmlu_subject_categories() -> MappingProxyType[str, str]:
    """Read-only mapping of all 57 MMLU subjects to their category."""
    text = files("nabench.evaluation").joinpath("mmlu_categories.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    bad = {s: c for s, c in data.items() if c not in MMLU_CATEGORIES}
    if bad:  # guards hand edits of the YAML
        raise ValueError(f"mmlu_categories.yaml has unknown categories: {bad}")
    return MappingProxyType(dict(data))


def mmlu_category(subject: str) -> str:
    """Category of an MMLU subject (e.g. ``"college_physics"`` → ``"stem"``)."""
    table = mmlu_subject_categories()
    try:
        return table[subject]
    except KeyError:
        close = difflib.get_close_matches(str(subject), table.keys(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownSubjectError(
            f"unknown MMLU subject {subject!r} (expected one of {len(table)} snake_case "
            f"subject names such as 'abstract_algebra'){hint}"
        ) from None
