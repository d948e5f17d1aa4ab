"""Eligibility audit: which items can be perturbed at all. The rest are quarantined with every
reason that applies (the first in `REASONS` order is the primary one) — never dropped."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.arrow import ListColumn, as_bool_mask
from nabench.schemas.tables import EXCLUDED_ARROW

# Order matters: the first reason that applies is the primary `reason`.
REASONS = (
    "not_four_choices",
    "empty_choice",
    "duplicate_choices",
    "has_none_option",
    "has_all_option",
    "missing_label",
    "invalid_label",
    "not_na_applicable",
    "in_eval_split",  # na-train: the question is in an evaluation split (audit.contamination)
)

# A choice that already says "none": "None", "Neither", "none of the above/these",
# "Neither A nor B" (option references only: content that starts with "neither" is fine).
NONE_OPTION = re.compile(
    r"^\W*(none|neither)\W*$"
    r"|\b(none|neither) of (the|these|those|them)\b"
    r"|^\W*neither\s+\(?([a-e]|[1-5]|i{1,3}|iv)\)?\s+nor\s+\(?([a-e]|[1-5]|i{1,3}|iv)\)?\W*$"
    r"|\bno (valid|correct) (option|answer|choice)s?\b"
    r"|\banswer not found\b",
    re.IGNORECASE,
)
# A choice that already says "all": "all of the above/these", "Both", "Both A and B".
ALL_OPTION = re.compile(
    r"\ball (of )?(the|these|those) (above|options|choices|answers|statements)\b"
    r"|\ball of (these|them)\b"
    r"|^\W*both\W*$"
    r"|^\W*both (of )?(these|them|the above)\b"
    r"|^\W*both\s+\(?([a-e]|[1-5]|i{1,3}|iv)\)?\s+(and|&)\s+\(?([a-e]|[1-5]|i{1,3}|iv)\)?\W*$",
    re.IGNORECASE,
)


def _normalise(values: pa.Array) -> pa.Array:
    """Case-fold and strip whitespace and trailing punctuation, for text comparisons."""
    lowered = pc.utf8_lower(pc.utf8_trim_whitespace(values))
    return pc.utf8_rtrim(lowered, characters=".!?;: ")


@dataclass(frozen=True)
class Audit:
    """Result of the audit: eligible items and the quarantine table."""

    eligible: pa.Table
    excluded: pa.Table


def audit_items(
    items: pa.Table,
    na_texts: Iterable[str] = (),
    all_texts: Iterable[str] = (),
    n_choices: int = 4,
) -> Audit:
    """Split items into eligible and excluded, vectorised over the flattened choices.

    `na_texts` / `all_texts` are the phrasings the recipe will insert: an item that already
    holds one of them is quarantined as has_none_option / has_all_option.
    """
    choices = items.column("choices").combine_chunks()
    lists = ListColumn(choices)  # its flat values line up with `flat` (null lists hold none)
    lengths = pc.list_value_length(choices).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(choices)
    stripped = pc.utf8_trim_whitespace(flat)

    def any_per_row(mask: pa.Array) -> np.ndarray:
        return lists.per_row_any(as_bool_mask(mask))

    normalised = _normalise(flat)

    def phrase_set(texts: Iterable[str]) -> pa.Array:
        return pa.array(sorted({t.strip().lower().rstrip(".!?;: ") for t in texts}), pa.string())

    flags = {
        "not_four_choices": lengths != n_choices,
        "empty_choice": any_per_row(pc.equal(stripped, "")),
        "duplicate_choices": lists.has_duplicates(stripped),
        "has_none_option": any_per_row(
            pc.or_(
                pc.match_substring_regex(flat, NONE_OPTION.pattern, ignore_case=True),
                pc.is_in(normalised, value_set=phrase_set(na_texts)),
            )
        ),
        "has_all_option": any_per_row(
            pc.or_(
                pc.match_substring_regex(flat, ALL_OPTION.pattern, ignore_case=True),
                pc.is_in(normalised, value_set=phrase_set(all_texts)),
            )
        ),
    }
    return split_by_flags(items, flags)


def split_by_flags(items: pa.Table, flags: dict[str, np.ndarray]) -> Audit:
    """Rows with any flag go to the quarantine with their reasons, the rest stay eligible."""
    n = items.num_rows
    ordered = [r for r in REASONS if r in flags]
    matrix = np.vstack([flags[r] for r in ordered]) if ordered else np.zeros((0, n), dtype=bool)
    bad = matrix.any(axis=0) if ordered else np.zeros(n, dtype=bool)
    eligible = items.filter(pa.array(~bad))
    bad_idx = np.flatnonzero(bad)
    reasons = [[ordered[k] for k in np.flatnonzero(matrix[:, i])] for i in bad_idx]
    excluded = items.take(pa.array(bad_idx, type=pa.int64()))
    excluded = excluded.append_column("reason", pa.array([r[0] for r in reasons], pa.string()))
    excluded = excluded.append_column("reasons", pa.array(reasons, pa.list_(pa.string())))
    return Audit(eligible, excluded.cast(EXCLUDED_ARROW))


def exclusion_counts(excluded: pa.Table) -> dict[str, object]:
    """Counts per primary reason and per (reason, subject), for the manifest and the card."""
    frame = excluded.select(["reason", "subject"]).to_pandas()
    frame["subject"] = frame["subject"].fillna("(none)")
    by_reason = frame["reason"].value_counts().sort_index()
    by_subject = frame.groupby(["reason", "subject"]).size().sort_index()
    nested: dict[str, dict[str, int]] = {}
    for (reason, subject), count in by_subject.items():
        nested.setdefault(str(reason), {})[str(subject)] = int(count)
    return {
        "total": len(frame),
        "by_reason": {str(k): int(v) for k, v in by_reason.items()},
        "by_reason_subject": nested,
    }
