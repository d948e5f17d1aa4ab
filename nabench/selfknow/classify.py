"""Classification of generated tasks: the model answers or refuses each task, with a reason.

Each task is sent, with the list of the taxonomy's reasons, to the classifier model (the
generator itself, or another model: *cross-model* classification), which must return JSON
``{"task_class": "feasible"|"infeasible", "answer": ..., "reason": ...}`` (plus ``analysis``
in the ``challenge`` style). Rules:

* the reason is free text; it is mapped to the taxonomy with :meth:`Taxonomy.find_reason`
  (names, ids and aliases, ignoring case and punctuation) and from there to its type. A reason
  that maps to nothing is **kept** verbatim (``reason_known`` false) and counted in
  :attr:`ClassificationResult.summary`; blank reasons and spellings of "none" count as no reason;
* a task whose answer is not valid JSON after every attempt is **kept** with ``valid`` false,
  an empty ``classified_class`` and the raw output, and counted; it is never fatal (the metrics
  count such rows as invalid, see :mod:`nabench.selfknow.metrics`);
* the output table carries the canonical columns of :mod:`nabench.selfknow.table`
  (``generated_*``, ``classified_*``, ``task``), so ``nabench selfknow metrics`` scores it as is.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.llm import (
    Backend,
    ChatRequest,
    JobPlan,
    JsonBatch,
    ResponseCache,
    RunStats,
    complete_json_batches,
    count_cached_batches,
)
from nabench.schemas import arrow_schema
from nabench.selfknow.generate import is_no_reason
from nabench.selfknow.prompts import (
    STYLES,
    PromptSet,
    Style,
    classification_prompt,
    classification_schema,
    load_prompts,
    reasons_list,
)
from nabench.selfknow.taxonomy import Taxonomy, load_taxonomy

ClassifierStyle = Literal["vanilla", "challenge", "same"]
CLASSIFICATION_NAMESPACE = "selfknow.classify"
REQUIRED_TASK_COLUMNS: tuple[str, ...] = ("task_id", "task", "category", "type", "reason")

CLASSIFICATIONS_ARROW = arrow_schema("selfknow_classifications")
"""Columns of the ``classifications`` config: one row per classified task.

``classified_reason`` is the model's reason ("" for none): its canonical name when it maps to
the taxonomy, else its text as given; ``reason_raw`` is always the text as given.
``classified_type`` is the mapped type's name ("" when the reason is unknown or absent).
"""


@dataclass(frozen=True)
class MappedReason:
    """A classifier's reason text resolved against the taxonomy."""

    text: str
    reason_id: str
    reason_name: str
    type_id: str
    type_name: str
    known: bool

    @property
    def empty(self) -> bool:
        return not self.reason_name


def map_reason(text: object, taxonomy: Taxonomy | None = None) -> MappedReason:
    """Resolve a reason text: canonical reason and its type, or unknown (kept), or none."""
    taxonomy = taxonomy or load_taxonomy()
    raw = "" if text is None else str(text)
    if is_no_reason(raw):
        return MappedReason(raw, "", "", "", "", known=False)
    reason = taxonomy.find_reason(raw)
    if reason is None:
        return MappedReason(raw, "", " ".join(raw.split()), "", "", known=False)
    sk_type = taxonomy.type_by_id(reason.type_id)
    return MappedReason(raw, reason.id, reason.name, sk_type.id, sk_type.name, known=True)


@dataclass(frozen=True)
class ClassificationSettings:
    """How tasks are classified (the recipe's ``classifier`` section minus the backend)."""

    style: ClassifierStyle = "same"
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 256
    max_answer_chars: int = 400
    max_analysis_chars: int = 300
    max_attempts: int = 3
    chunk_size: int = 8

    def __post_init__(self) -> None:
        if self.style not in (*STYLES, "same"):
            raise NabenchError(f"classifier style must be vanilla, challenge or same: {self.style}")
        if self.chunk_size < 1 or self.max_attempts < 1:
            raise NabenchError("chunk_size and max_attempts must be >= 1")


@dataclass
class ClassificationSummary:
    """Counts over one classification run.

    Reasons are counted on valid infeasible verdicts: ``known_reasons`` (mapped to the
    taxonomy), ``unknown_reasons`` (text → count, kept verbatim in the table) and
    ``infeasible_without_reason``; a valid feasible verdict that still gives a reason is
    counted in ``feasible_with_reason`` (the metrics ignore that reason).
    """

    total: int = 0
    valid: int = 0
    invalid: int = 0
    by_class: dict[str, int] = field(default_factory=dict)
    known_reasons: int = 0
    unknown_reasons: dict[str, int] = field(default_factory=dict)
    infeasible_without_reason: int = 0
    feasible_with_reason: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "valid": self.valid,
            "invalid": self.invalid,
            "valid_rate": None if not self.total else self.valid / self.total,
            "by_class": dict(self.by_class),
            "known_reasons": self.known_reasons,
            "unknown_reasons": dict(self.unknown_reasons),
            "infeasible_without_reason": self.infeasible_without_reason,
            "feasible_with_reason": self.feasible_with_reason,
        }


@dataclass
class ClassificationResult:
    table: pa.Table
    stats: RunStats
    summary: ClassificationSummary


def _frame(tasks: pa.Table | pd.DataFrame) -> pd.DataFrame:
    frame = tasks.to_pandas() if isinstance(tasks, pa.Table) else tasks
    missing = [name for name in REQUIRED_TASK_COLUMNS if name not in frame.columns]
    if missing:
        raise NabenchError(f"tasks table is missing column(s): {', '.join(missing)}")
    if frame["task_id"].duplicated().any():
        raise NabenchError("tasks table has duplicate task_id values")
    if "quarantine_reason" in frame.columns:
        raise NabenchError("tasks table is a quarantine table: its tasks were not kept")
    blank = [_text(r, "task_id") for r in frame.to_dict("records") if not _text(r, "task").strip()]
    if blank:  # the generator quarantines these (empty_task): nothing to ask the model
        raise NabenchError(f"tasks table has {len(blank)} task(s) without text (first {blank[0]})")
    return frame


def _text(row: Mapping[str, Any], key: str, default: str = "") -> str:
    value = row.get(key, default)
    return default if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _styles_and_seeds(
    rows: list[dict[str, Any]], settings: ClassificationSettings
) -> tuple[list[Style], list[int]]:
    """Per task: the prompt style it is classified with and its request seed."""
    styles: list[Style] = []
    for row in rows:
        style = settings.style if settings.style != "same" else _text(row, "prompt_style")
        styles.append(style if style in STYLES else "vanilla")  # type: ignore[arg-type]
    seeds = [
        random.Random(f"{settings.seed}:classify:{_text(row, 'task_id')}").randrange(2**31)
        for row in rows
    ]
    return styles, seeds


def _batches(
    rows: list[dict[str, Any]],
    styles: list[Style],
    seeds: list[int],
    settings: ClassificationSettings,
    prompts: PromptSet,
    reasons_text: str,
) -> list[JsonBatch]:
    """One JSON batch per style (its requests share a schema)."""
    batches = []
    for style in STYLES:
        members = [i for i, s in enumerate(styles) if s == style]
        if not members:
            continue
        requests = [
            ChatRequest.chat(
                classification_prompt(prompts, style, _text(rows[i], "task"), reasons_text),
                system=prompts.text("classification", "system"),
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=seeds[i],
            )
            for i in members
        ]
        schema = classification_schema(
            style, settings.max_answer_chars, settings.max_analysis_chars
        )
        batches.append(JsonBatch(members, requests, schema))
    return batches


def _tally(summary: ClassificationSummary, valid: bool, task_class: str, mapped: Any) -> str | None:
    """Count one verdict into ``summary``; the unknown reason name to count, if any."""
    if not valid:
        summary.invalid += 1
        return None
    summary.valid += 1
    if task_class == "feasible":
        summary.feasible_with_reason += not mapped.empty
    elif mapped.known:
        summary.known_reasons += 1
    elif not mapped.empty:
        return str(mapped.reason_name)
    else:
        summary.infeasible_without_reason += 1
    return None


def _namespace(prompts: PromptSet, taxonomy: Taxonomy) -> str:
    return f"{CLASSIFICATION_NAMESPACE}|prompts={prompts.version}|taxonomy={taxonomy.version}"


def classify_tasks(
    backend: Backend,
    cache: ResponseCache,
    tasks: pa.Table | pd.DataFrame,
    settings: ClassificationSettings,
    *,
    taxonomy: Taxonomy | None = None,
    prompts: PromptSet | None = None,
    progress: bool = False,
    confirmed: bool = True,
) -> ClassificationResult:
    """Ask ``backend`` (through ``cache``) to classify every task of ``tasks``.

    ``tasks`` needs the columns of :data:`REQUIRED_TASK_COLUMNS`; ``prompt_style`` (used when
    the classifier style is ``same``) and ``generator_model`` are read when present. Unless
    ``confirmed``, a long job stops with its plan before the first request
    (`nabench.llm.ConfirmationNeeded`).
    """
    taxonomy = taxonomy or load_taxonomy()
    prompts = prompts or load_prompts()
    rows = _frame(tasks).to_dict("records")
    namespace = _namespace(prompts, taxonomy)
    styles, seeds = _styles_and_seeds(rows, settings)
    batches = _batches(rows, styles, seeds, settings, prompts, reasons_list(prompts, taxonomy))
    cached = count_cached_batches(backend, cache, batches, namespace)
    job = JobPlan(f"classify {len(rows):,} task(s)", backend.model_id, len(rows), cached)
    job.require_confirmation(confirmed)
    results, stats = complete_json_batches(
        backend,
        cache,
        batches,
        total=len(rows),
        max_attempts=settings.max_attempts,
        namespace=namespace,
        chunk_size=settings.chunk_size,
        progress=progress,
    )
    summary = ClassificationSummary(total=len(rows))
    by_class: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    records: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        result = results[i]
        value: dict[str, Any] = result.value if result.valid else {}
        task_class = _text(value, "task_class")
        mapped = map_reason(value.get("reason"), taxonomy)
        if result.valid:
            by_class[task_class] += 1
        name = _tally(summary, result.valid, task_class, mapped)
        if name is not None:
            unknown[name] += 1
        records.append(
            _record(
                row,
                value,
                result,
                mapped,
                backend,
                styles[i],
                seeds[i],
                ctx=(prompts, taxonomy, settings),
            )
        )
    summary.by_class = dict(sorted(by_class.items()))
    summary.unknown_reasons = dict(sorted(unknown.items()))
    return ClassificationResult(
        table=pa.Table.from_pylist(records, schema=CLASSIFICATIONS_ARROW),
        stats=stats,
        summary=summary,
    )


def _record(
    row: dict[str, Any],
    value: dict[str, Any],
    result: Any,
    mapped: Any,
    backend: Backend,
    style: str,
    seed: int,
    *,
    ctx: tuple[PromptSet, Taxonomy, ClassificationSettings],
) -> dict[str, Any]:
    """One row of the classifications table."""
    prompts, taxonomy, settings = ctx
    generator_model = _text(row, "generator_model")
    return {
        "task_id": _text(row, "task_id"),
        "task": _text(row, "task"),
        "prompt_style": _text(row, "prompt_style"),
        "generator_model": generator_model,
        "generated_class": _text(row, "category"),
        "generated_type": _text(row, "type"),
        "generated_reason": _text(row, "reason"),
        "classifier_model": backend.model_id,
        "classifier_backend": backend.name,
        "classifier_style": style,
        "cross_model": bool(generator_model) and generator_model != backend.model_id,
        "classified_class": _text(value, "task_class"),
        "answer": _text(value, "answer"),
        "classified_reason": mapped.reason_name,
        "classified_reason_id": mapped.reason_id,
        "classified_type": mapped.type_name,
        "classified_type_id": mapped.type_id,
        "reason_known": mapped.known,
        "reason_raw": mapped.text,
        "analysis": _text(value, "analysis"),
        "valid": result.valid,
        "attempts": result.attempts,
        "error": _text({"e": result.error}, "e"),
        "raw_output": result.raw,
        "prompt_version": prompts.version,
        "taxonomy_version": taxonomy.version,
        "temperature": float(settings.temperature),
        "request_seed": seed,
    }
