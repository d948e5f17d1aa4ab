"""Line of Duty self-knowledge metrics over a canonical table (see :mod:`.table`).

Each row is one task: the class (feasible/infeasible) and reason the model gave when it
*generated* the task, and the class and reason it gave when it later *classified* it.

Decisions (tested in ``tests/selfknow``):

* **Classes** are matched case-insensitively after :func:`normalise_reason` ("Feasible",
  " infeasible."). A row whose generated or classified class is anything else is *invalid*: it
  is not scored, but counted in ``quality.invalid_rows`` (with a few examples, each by its
  index label in the table, its position when the label is no integer). ``n`` is the
  number of scored rows; ``n + quality.invalid_rows`` is the number of rows in the table.
* **Class decides.** A row classified feasible counts as feasible even if it carries a reason;
  such rows are counted in ``quality`` but their reason is ignored.
* **Reason matching** (``match="reason"``, the paper's definition): two infeasible verdicts agree
  (N_rr) when their reasons are the same after normalisation and alias resolution. Reasons not
  in the taxonomy are kept and compared by normalised text. A missing reason (blank, or "none",
  "n/a" and the like: :func:`~.generate.is_no_reason`) on an infeasible verdict never matches
  anything, so such a pair counts in N_rr'.
* **Type matching** (``match="type"``, a nabench variant): the pair also agrees when both sides
  have the same self-knowledge type, even with different reasons. Everything else is as above,
  so type-level N_rr ≥ reason-level N_rr and N_ff, N_fr, N_rf do not change.
* **Type of a verdict**: the type column (``generated_type`` / ``classified_type``) when it names
  a taxonomy type; otherwise the type of the reason; otherwise the type column's text as an
  unknown type; otherwise none.
* **Per-type metrics** attribute every scored row, feasible ones included, to the type of its
  *generated* verdict (the type the task was written for, e.g. a feasible task "close to the
  boundary" of temporal perception). Rows without any generated type go to
  ``"(unattributed)"``. So when a table has no ``generated_type`` column, feasible rows are
  unattributed and per-type overconfidence is undefined. Per-type counts add up to the overall
  counts.
* **Zero denominators** give ``None``; see :mod:`.scores`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from nabench.core.errors import NabenchError
from nabench.selfknow.generate import is_no_reason
from nabench.selfknow.scores import SelfKnowledgeCounts, SelfKnowledgeScores, score_counts
from nabench.selfknow.table import REQUIRED_COLUMNS
from nabench.selfknow.taxonomy import Taxonomy, load_taxonomy, normalise_reason

Match = Literal["reason", "type"]
MATCH_MODES: tuple[Match, ...] = ("reason", "type")

FEASIBLE_LABEL = "Feasible"
"""Confusion-matrix label for a feasible verdict."""
NO_REASON_LABEL = "(no reason)"
"""Confusion-matrix label for an infeasible verdict without a reason."""
UNATTRIBUTED = "(unattributed)"
"""``by_type`` key for rows whose generated verdict has no type."""

_INVALID_EXAMPLES = 5


@dataclass(frozen=True)
class TypeMetrics:
    """Counts and scores of the rows generated for one self-knowledge type."""

    key: str
    name: str
    known: bool
    counts: SelfKnowledgeCounts
    scores: SelfKnowledgeScores


@dataclass(frozen=True)
class ConfusionMatrix:
    """Generation verdict (rows) against classification verdict (columns), over scored rows.

    Labels are :data:`FEASIBLE_LABEL`, the taxonomy's reason names in taxonomy order, then any
    unknown reasons (sorted) and :data:`NO_REASON_LABEL` when they occur.
    """

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    def count(self, generated: str, classified: str) -> int:
        return self.counts[self.labels.index(generated)][self.labels.index(classified)]

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.counts)

    def to_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(list(self.counts), index=list(self.labels), columns=list(self.labels))
        frame.index.name = "generated \\ classified"
        return frame


@dataclass(frozen=True)
class MismatchPair:
    """A (generated reason, classified reason) pair counted in N_rr', with its frequency."""

    generated: str
    classified: str
    count: int


@dataclass(frozen=True)
class DataQuality:
    """Irregular rows found while scoring; none of them is silently dropped."""

    total_rows: int
    invalid_rows: int
    invalid_examples: tuple[tuple[int, str, str], ...]
    generated_feasible_with_reason: int
    classified_feasible_with_reason: int
    generated_infeasible_without_reason: int
    classified_infeasible_without_reason: int
    unknown_generated_reasons: Mapping[str, int] = field(default_factory=dict)
    unknown_classified_reasons: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "total_rows": self.total_rows,
            "invalid_rows": self.invalid_rows,
            "invalid_examples": [
                {"row": row, "generated_class": gen, "classified_class": cls}
                for row, gen, cls in self.invalid_examples
            ],
            "generated_feasible_with_reason": self.generated_feasible_with_reason,
            "classified_feasible_with_reason": self.classified_feasible_with_reason,
            "generated_infeasible_without_reason": self.generated_infeasible_without_reason,
            "classified_infeasible_without_reason": self.classified_infeasible_without_reason,
            "unknown_generated_reasons": dict(self.unknown_generated_reasons),
            "unknown_classified_reasons": dict(self.unknown_classified_reasons),
        }


@dataclass(frozen=True)
class SelfKnowledgeMetrics:
    """Everything :func:`selfknow_metrics` computes for one table and one matching mode."""

    match: Match
    counts: SelfKnowledgeCounts
    scores: SelfKnowledgeScores
    by_type: Mapping[str, TypeMetrics]
    confusion: ConfusionMatrix
    mismatches: tuple[MismatchPair, ...]
    quality: DataQuality
    taxonomy_version: str

    @property
    def n(self) -> int:
        return self.counts.n


@dataclass(frozen=True)
class _Verdict:
    feasible: bool | None  # None: unparseable class
    reason_key: str | None
    reason_label: str | None
    unknown_reason: bool
    type_key: str | None
    type_label: str | None
    type_known: bool


def _parse_class(value: str) -> bool | None:
    folded = normalise_reason(value)
    if folded == "feasible":
        return True
    if folded == "infeasible":
        return False
    return None


def _verdict(class_text: str, reason_text: str, type_text: str, taxonomy: Taxonomy) -> _Verdict:
    # "None", "N/A": no reason (no type), as in a classification; compared as text, two
    # such cells matched each other
    reason_text = "" if is_no_reason(reason_text) else reason_text
    type_text = "" if is_no_reason(type_text) else type_text
    reason = taxonomy.find_reason(reason_text)
    reason_norm = normalise_reason(reason_text)
    reason_key: str | None
    reason_label: str | None
    if reason is not None:
        reason_key, reason_label = reason.id, reason.name
    elif reason_norm:
        reason_key, reason_label = reason_norm, " ".join(reason_text.split())
    else:
        reason_key = reason_label = None

    sk_type = taxonomy.find_type(type_text) or (
        taxonomy.type_by_id(reason.type_id) if reason is not None else None
    )
    type_norm = normalise_reason(type_text)
    type_key: str | None
    type_label: str | None
    if sk_type is not None:
        type_key, type_label, type_known = sk_type.id, sk_type.name, True
    elif type_norm:
        type_key, type_label, type_known = type_norm, " ".join(type_text.split()), False
    else:
        type_key = type_label = None
        type_known = False

    return _Verdict(
        feasible=_parse_class(class_text),
        reason_key=reason_key,
        reason_label=reason_label,
        unknown_reason=reason is None and bool(reason_norm),
        type_key=type_key,
        type_label=type_label,
        type_known=type_known,
    )


def _confusion_label(verdict: _Verdict, labels: dict[str, str]) -> str:
    """Label of a verdict; unknown reasons keep the spelling first seen for their key."""
    if verdict.feasible:
        return FEASIBLE_LABEL
    if verdict.reason_key is None or verdict.reason_label is None:
        return NO_REASON_LABEL
    return labels.setdefault(verdict.reason_key, verdict.reason_label)


def _column(table: pd.DataFrame, name: str) -> list[str]:
    if name not in table.columns:
        return [""] * len(table)
    return ["" if pd.isna(value) else str(value) for value in table[name].tolist()]


def _outcome(gen: _Verdict, cls: _Verdict, match: Match) -> str:
    """ff / fr / rf / rr, or rr_mismatch when both say infeasible for different reasons."""
    if gen.feasible:
        return "ff" if cls.feasible else "fr"
    if cls.feasible:
        return "rf"
    same_reason = gen.reason_key is not None and gen.reason_key == cls.reason_key
    same_type = gen.type_key is not None and gen.type_key == cls.type_key
    return "rr" if same_reason or (match == "type" and same_type) else "rr_mismatch"


@dataclass
class _Tally:
    """What one pass over the rows counts."""

    per_type: dict[str, Counter[str]] = field(default_factory=dict)
    type_names: dict[str, tuple[str, bool]] = field(default_factory=dict)
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    mismatches: Counter[tuple[str, str]] = field(default_factory=Counter)
    unknown: dict[str, Counter[str]] = field(
        default_factory=lambda: {"generated": Counter(), "classified": Counter()}
    )
    quality: Counter[str] = field(default_factory=Counter)
    invalid_examples: list[tuple[int, str, str]] = field(default_factory=list)
    reason_labels: dict[str, str] = field(default_factory=dict)

    def invalid(self, row: int, generated_class: str, classified_class: str) -> None:
        self.quality["invalid_rows"] += 1
        if len(self.invalid_examples) < _INVALID_EXAMPLES:
            self.invalid_examples.append((row, generated_class, classified_class))

    def add(self, gen: _Verdict, cls: _Verdict, match: Match) -> None:
        pair = (
            _confusion_label(gen, self.reason_labels),
            _confusion_label(cls, self.reason_labels),
        )
        for side, verdict, label in (("generated", gen, pair[0]), ("classified", cls, pair[1])):
            if verdict.feasible and verdict.reason_key is not None:
                self.quality[f"{side}_feasible_with_reason"] += 1
            if not verdict.feasible and verdict.reason_key is None:
                self.quality[f"{side}_infeasible_without_reason"] += 1
            if not verdict.feasible and verdict.unknown_reason:
                self.unknown[side][label] += 1
        outcome = _outcome(gen, cls, match)
        type_key = gen.type_key or UNATTRIBUTED
        self.type_names.setdefault(type_key, (gen.type_label or UNATTRIBUTED, gen.type_known))
        self.per_type.setdefault(type_key, Counter())[outcome] += 1
        self.confusion[pair] += 1
        if outcome == "rr_mismatch":
            self.mismatches[pair] += 1

    def data_quality(self, total_rows: int) -> DataQuality:
        q = self.quality
        return DataQuality(
            total_rows=total_rows,
            invalid_rows=q["invalid_rows"],
            invalid_examples=tuple(self.invalid_examples),
            generated_feasible_with_reason=q["generated_feasible_with_reason"],
            classified_feasible_with_reason=q["classified_feasible_with_reason"],
            generated_infeasible_without_reason=q["generated_infeasible_without_reason"],
            classified_infeasible_without_reason=q["classified_infeasible_without_reason"],
            unknown_generated_reasons=dict(sorted(self.unknown["generated"].items())),
            unknown_classified_reasons=dict(sorted(self.unknown["classified"].items())),
        )


def selfknow_metrics(
    table: pd.DataFrame, match: Match = "reason", taxonomy: Taxonomy | None = None
) -> SelfKnowledgeMetrics:
    """Score a canonical self-knowledge table (see the module docstring for every rule).

    ``match="reason"`` counts N_rr when reasons agree; ``match="type"`` also when types agree.
    Raises :class:`NabenchError` when required columns are missing or ``match`` is unknown.
    """
    if match not in MATCH_MODES:
        raise NabenchError(
            f"unknown match mode {match!r}; expected one of {', '.join(MATCH_MODES)}"
        )
    missing = [name for name in REQUIRED_COLUMNS if name not in table.columns]
    if missing:
        raise NabenchError(f"table is missing canonical column(s): {', '.join(missing)}")
    taxonomy = taxonomy or load_taxonomy()
    col = {
        name: _column(table, name)
        for name in (*REQUIRED_COLUMNS, "generated_type", "classified_type")
    }
    tally = _Tally()
    for row in range(len(table)):
        gen, cls = (
            _verdict(col[f"{side}_class"][row], col[f"{side}_reason"][row],
                     col[f"{side}_type"][row], taxonomy)
            for side in ("generated", "classified")
        )  # fmt: skip
        if gen.feasible is None or cls.feasible is None:
            label = table.index[row]  # a part of a table (one style) names its own rows
            row_id = int(label) if pd.api.types.is_integer(label) else row
            tally.invalid(row_id, col["generated_class"][row], col["classified_class"][row])
        else:
            tally.add(gen, cls, match)
    counts = _counts(sum(tally.per_type.values(), Counter()))
    return SelfKnowledgeMetrics(
        match=match,
        counts=counts,
        scores=score_counts(counts),
        by_type=_by_type(tally.per_type, tally.type_names, taxonomy),
        confusion=_confusion_matrix(tally.confusion, taxonomy),
        mismatches=tuple(
            MismatchPair(generated=g, classified=c, count=k)
            for (g, c), k in sorted(tally.mismatches.items(), key=lambda kv: (-kv[1], kv[0]))
        ),
        quality=tally.data_quality(len(table)),
        taxonomy_version=taxonomy.version,
    )


def require_scored(metrics: SelfKnowledgeMetrics, source: str) -> None:
    """Refuse metrics of nothing: a :class:`NabenchError` naming ``source`` when no row of its
    table was scored (as ``nabench eval`` on no items); the CLI and the build both ask here."""
    if metrics.n:
        return
    q = metrics.quality
    raise NabenchError(
        f"{source}: none of its {q.total_rows} row(s) has a feasible/infeasible generated "
        "and classified class"
        + "".join(f" (row {r}: {g!r}, {c!r})" for r, g, c in q.invalid_examples[:1])
        + ": nothing to score"
    )


def _counts(tally: Mapping[str, int]) -> SelfKnowledgeCounts:
    return SelfKnowledgeCounts(
        ff=tally.get("ff", 0),
        fr=tally.get("fr", 0),
        rf=tally.get("rf", 0),
        rr=tally.get("rr", 0),
        rr_mismatch=tally.get("rr_mismatch", 0),
    )


def _by_type(
    per_type: Mapping[str, Counter[str]],
    type_names: Mapping[str, tuple[str, bool]],
    taxonomy: Taxonomy,
) -> dict[str, TypeMetrics]:
    """Taxonomy types first (always present, possibly empty), then unknown, then unattributed."""
    order = [sk_type.id for sk_type in taxonomy.types]
    extra = sorted(key for key in per_type if key not in order and key != UNATTRIBUTED)
    order += extra + ([UNATTRIBUTED] if UNATTRIBUTED in per_type else [])
    result: dict[str, TypeMetrics] = {}
    for key in order:
        counts = _counts(per_type.get(key, Counter()))
        if key in type_names:
            name, known = type_names[key]
        else:
            name, known = taxonomy.type_by_id(key).name, True
        result[key] = TypeMetrics(
            key=key, name=name, known=known, counts=counts, scores=score_counts(counts)
        )
    return result


def _confusion_matrix(tally: Mapping[tuple[str, str], int], taxonomy: Taxonomy) -> ConfusionMatrix:
    seen = {label for pair in tally for label in pair}
    known = [FEASIBLE_LABEL] + [reason.name for reason in taxonomy.reasons]
    unknown = sorted(seen - set(known) - {NO_REASON_LABEL})
    labels = tuple(known + unknown + ([NO_REASON_LABEL] if NO_REASON_LABEL in seen else []))
    return ConfusionMatrix(
        labels=labels,
        counts=tuple(tuple(tally.get((g, c), 0) for c in labels) for g in labels),
    )
