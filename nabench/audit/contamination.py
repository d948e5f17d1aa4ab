"""Contamination audit: a training question must not appear in an evaluation split.

Two matches, both on the question text: `exact` (byte-equal) and `normalised` (equal after
collapsing whitespace runs to one space, trimming and case-folding). An item that matches is
excluded before any model call, with reason `in_eval_split`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

REASON = "in_eval_split"


def normalise_question(text: str) -> str:
    """Whitespace runs collapsed to one space, ends trimmed, case-folded."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class EvalIndex:
    """Question texts of the evaluation splits, raw and normalised."""

    exact: frozenset[str]
    normalised: frozenset[str]
    origin: str
    rows: int

    @classmethod
    def from_questions(cls, questions: Iterable[str], origin: str) -> EvalIndex:
        texts = list(questions)
        return cls(
            frozenset(texts), frozenset(normalise_question(t) for t in texts), origin, len(texts)
        )

    def match(self, question: str) -> str | None:
        """`exact`, `normalised` or None (the first that applies)."""
        if question in self.exact:
            return "exact"
        if normalise_question(question) in self.normalised:
            return "normalised"
        return None

    def matches(self, questions: Sequence[str]) -> list[str | None]:
        return [self.match(q) for q in questions]


def contamination_flags(questions: Sequence[str], index: EvalIndex) -> dict[str, np.ndarray]:
    """`{in_eval_split: mask}` for `audit.split_by_flags`."""
    return {REASON: np.array([m is not None for m in index.matches(questions)], dtype=bool)}


def contamination_counts(questions: Sequence[str], index: EvalIndex) -> dict[str, int]:
    """How many questions match exactly, and how many only after normalisation."""
    found = index.matches(questions)
    return {
        "checked": len(found),
        "exact": sum(m == "exact" for m in found),
        "normalised_only": sum(m == "normalised" for m in found),
    }
