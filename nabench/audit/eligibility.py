"""Eligibility audit: which items can be perturbed at all. The rest are quarantined with every
reason that applies (the first in `REASONS` order is the primary one) — never dropped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.audit.patterns import flag_options_and_phrases, normalise
from nabench.core.arrow import ListColumn, as_bool_mask
from nabench.schemas.redux import REDUX_REASONS
from nabench.schemas.tables import EXCLUDED_ARROW

# Order matters: the first reason that applies is the primary `reason`.
REASONS = (
    "excluded_subject",  # a recipe choice (`exclude_subjects`), so it comes before any defect
    "missing_question",
    "not_four_choices",
    "empty_choice",
    "duplicate_choices",
    "has_none_option",
    "has_all_option",
    # an option is a text the recipe inserts that no pattern flags for the same reason (a
    # custom na_text such as "True, True" that is an ordinary option of the item)
    "has_inserted_text",
    "refers_to_other_options",
    *REDUX_REASONS,  # MMLU-Redux's verdict on the item (audit.redux), per flagged error type
    "missing_label",
    "invalid_label",
    "not_na_applicable",
    "in_eval_split",  # na-train: the question is in an evaluation split (audit.contamination)
)


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
    exclude_subjects: Iterable[str] = (),
    extra_flags: Mapping[str, np.ndarray] | None = None,
) -> Audit:
    """Split items into eligible and excluded, vectorised over the flattened choices.

    `na_texts` / `all_texts` are the phrasings the recipe will insert. An item holding any
    phrasing of `option_patterns.yaml` is quarantined as has_none_option / has_all_option;
    one that holds an inserted text the patterns do not flag so (a custom NA text that is an
    ordinary option, "True, True") as has_inserted_text, not as holding an NA option
    (options compared after `normalise`). Items of a
    subject in `exclude_subjects` are quarantined as excluded_subject. `extra_flags` are
    per-reason masks other audit sources computed (MMLU-Redux: `audit.redux`).
    """
    choices = items.column("choices").combine_chunks()
    lists = ListColumn(choices)  # its flat values line up with `flat` (null lists hold none)
    lengths = pc.list_value_length(choices).fill_null(0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(choices)
    # A null element is an empty option, not a crash further down the pipeline.
    empty = as_bool_mask(pc.or_kleene(pc.is_null(flat), pc.equal(normalise(flat), "")))
    phrases = {"has_none_option": tuple(na_texts), "has_all_option": tuple(all_texts)}
    option_flags, phrase_hits = flag_options_and_phrases(flat, phrases)
    inserted = np.logical_or.reduce([phrase_hits[r] & ~option_flags[r] for r in phrases])
    flags = {
        # A null or blank question, or a null choice element, is a malformed source row:
        # quarantined, and never compared or perturbed (a null would fail the whole build;
        # a blank question would be built as an item with no question).
        "missing_question": as_bool_mask(
            pc.or_kleene(
                pc.is_null(items.column("question")),
                pc.equal(pc.utf8_trim_whitespace(items.column("question")), ""),
            )
        ),
        "not_four_choices": lengths != n_choices,
        "empty_choice": lists.per_row_any(empty),
        "duplicate_choices": lists.has_duplicates(normalise(flat, fold=False).fill_null("")),
        **{reason: lists.per_row_any(mask) for reason, mask in option_flags.items()},
        "has_inserted_text": lists.per_row_any(inserted),
    }
    flags["excluded_subject"] = subject_mask(items, exclude_subjects)
    flags.update(extra_flags or {})
    return split_by_flags(items, flags)


def subject_mask(items: pa.Table, subjects: Iterable[str]) -> np.ndarray:
    """Rows whose subject is one of `subjects`."""
    wanted = pa.array(sorted(set(subjects)), pa.string())
    return as_bool_mask(pc.is_in(items.column("subject"), value_set=wanted))


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
