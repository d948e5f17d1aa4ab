"""MMLU subject → category (stem, humanities, social_sciences, other), loaded from YAML.

Two groupings, by name: ``lm_eval`` (lm-evaluation-harness's, the default everywhere) and
``hendrycks`` (the benchmark authors' own ``categories.py``; anatomy is ``other`` there,
``stem`` in lm-eval's). The NA study's report preset shows both.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import Final, Literal

import yaml

from nabench.core.errors import NabenchError

__all__ = [
    "GROUPINGS",
    "MMLU_CATEGORIES",
    "Grouping",
    "UnknownSubjectError",
    "mmlu_category",
    "mmlu_subject_categories",
]

MMLU_CATEGORIES: Final = ("stem", "humanities", "social_sciences", "other")
Grouping = Literal["lm_eval", "hendrycks"]
GROUPINGS: Final[tuple[Grouping, ...]] = ("lm_eval", "hendrycks")


class UnknownSubjectError(NabenchError, ValueError):
    """A subject name that is not one of the 57 MMLU subjects."""


def _read(name: str) -> object:
    return yaml.safe_load(files("nabench.evaluation").joinpath(name).read_text("utf-8"))


@cache
def mmlu_subject_categories(grouping: Grouping = "lm_eval") -> MappingProxyType[str, str]:
    """Read-only mapping of all 57 MMLU subjects to their category under ``grouping``."""
    if grouping == "lm_eval":
        data = dict(_read("mmlu_categories.yaml"))  # type: ignore[call-overload]
    elif grouping == "hendrycks":
        raw = _read("mmlu_categories_hendrycks.yaml")
        category_of_sub = {
            sub: cat
            for cat, subs in raw["categories"].items()  # type: ignore[index]
            for sub in subs
        }
        data = {
            subject: category_of_sub[sub]
            for subject, sub in raw["subcategories"].items()  # type: ignore[index]
        }
    else:
        raise NabenchError(
            f"unknown category grouping {grouping!r} (known: {', '.join(GROUPINGS)})"
        )
    bad = {s: c for s, c in data.items() if c not in MMLU_CATEGORIES}
    if bad:  # guards hand edits of the YAML
        raise ValueError(f"MMLU {grouping} grouping has unknown categories: {bad}")
    return MappingProxyType(data)


def mmlu_category(subject: str, grouping: Grouping = "lm_eval") -> str:
    """Category of an MMLU subject (e.g. ``"college_physics"`` → ``"stem"``)."""
    table = mmlu_subject_categories(grouping)
    try:
        return table[subject]
    except KeyError:
        close = difflib.get_close_matches(str(subject), table.keys(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownSubjectError(
            f"unknown MMLU subject {subject!r} (expected one of {len(table)} snake_case "
            f"subject names such as 'abstract_algebra'){hint}"
        ) from None
