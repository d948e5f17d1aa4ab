"""Generation of self-knowledge tasks: a balanced plan, model calls, and quarantine.

**Plan.** For ``n_per_class`` tasks per class (feasible, infeasible) and per prompt style:

* each of the taxonomy's types gets ``n // T`` slots of each class (``T`` = number of types,
  5 in taxonomy 1.0). When ``n`` is not a multiple of ``T`` the remaining ``n % T`` slots go to
  ``n % T`` *distinct* types drawn with ``random.Random(f"{seed}:remainder:{category}")``, so
  per-type counts differ by at most one and every class still has exactly ``n`` slots;
* an infeasible slot's reason is drawn within its type with
  ``random.Random(f"{seed}:reasons:{type_id}")``: the type's reasons are shuffled and dealt in
  rounds, so a type's reasons are used equally often (± 1) and the draw is reproducible;
* every slot gets its own request seed (``random.Random(f"{seed}:request:{task_id}")``) and its
  index ("task 3 of 4 of this kind") is in the prompt, so no two slots are the same request and
  the response cache never collapses them. The plan does not depend on the style: every style
  gets the same slots (so styles are comparable).

No global random state is used anywhere.

**Quarantine.** A generated task is kept only if it is valid JSON (after ``max_attempts``
tries, see :func:`nabench.llm.complete_json`) and matches its planned slot. Everything else is
kept in the quarantine table with a reason (:data:`QUARANTINE_REASONS`), never dropped:

* ``invalid_json``: no valid JSON after every attempt (backend errors included);
* ``missing_from_batch``: a batched request returned fewer tasks than slots;
* ``empty_task``: the task text is blank;
* ``category_mismatch``: the category is not the planned one;
* ``unknown_type`` / ``type_mismatch``: the type is not in the taxonomy (aliases are accepted)
  / is another type than planned;
* ``unknown_reason`` / ``reason_mismatch``: for an infeasible slot, the reason is not in the
  taxonomy / is another reason than planned;
* ``feasible_with_reason``: a feasible slot came back with a reason (``""``, "none", "n/a" and
  the like count as no reason);
* ``duplicate``: same text as a task kept earlier, after :func:`normalise_reason` folding and
  removing spaces ("Task 1." and "task1" are duplicates);
* ``near_duplicate``: character 3-gram Jaccard similarity ≥ :data:`NEAR_DUPLICATE_THRESHOLD`
  (0.8) with a task kept earlier.

The first four checks run on every row, and all failing checks are listed (``reasons``); the
first one is the row's ``reason``. Duplicates are searched, in plan order, among the tasks kept
so far *within one prompt style* (styles are separate experimental conditions).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.llm import (
    Backend,
    ChatRequest,
    JobPlan,
    JsonBatch,
    JsonResult,
    ResponseCache,
    RunStats,
    complete_json_batches,
    count_cached_batches,
)
from nabench.schemas import arrow_schema
from nabench.selfknow.prompts import (
    CLASSES,
    STYLES,
    PromptSet,
    SlotText,
    Style,
    generation_prompt,
    generation_schema,
    load_prompts,
)
from nabench.selfknow.taxonomy import Taxonomy, load_taxonomy, normalise_reason

NEAR_DUPLICATE_THRESHOLD = 0.8
"""Character 3-gram Jaccard similarity at or above which a task is a near-duplicate."""

QUARANTINE_REASONS: tuple[str, ...] = (
    "invalid_json",
    "missing_from_batch",
    "empty_task",
    "category_mismatch",
    "unknown_type",
    "type_mismatch",
    "unknown_reason",
    "reason_mismatch",
    "feasible_with_reason",
    "duplicate",
    "near_duplicate",
)

NO_REASON_TEXTS = frozenset({"", "none", "n a", "na", "null", "nil", "no reason", "not applicable"})
"""Folded reason texts that mean "no reason" (a feasible verdict)."""

GENERATION_NAMESPACE = "selfknow.generate"

TASKS_ARROW = arrow_schema("selfknow_tasks")
"""Columns of the ``tasks`` config: one row per kept task. ``reason`` is "" for feasible."""

QUARANTINE_ARROW = arrow_schema("selfknow_quarantine")
"""Columns of the ``quarantine`` config: one row per planned slot that yielded no kept task.

``category``/``type``/``reason``/``task`` are what the model returned (null if nothing valid).
"""


# -- plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One planned task: style, class, type and (infeasible only) reason."""

    slot_id: int
    task_id: str
    style: Style
    category: str
    type_id: str
    reason_id: str | None
    index: int
    count: int
    request_seed: int


def type_counts(n: int, taxonomy: Taxonomy, seed: int, category: str) -> dict[str, int]:
    """Slots per type for ``n`` tasks of ``category``: ``n // T`` each, remainder to random types.

    The ``n % T`` extra slots go to distinct types drawn with
    ``random.Random(f"{seed}:remainder:{category}")``.
    """
    if n < 0:
        raise NabenchError(f"n_per_class must be >= 0, not {n}")
    type_ids = [sk_type.id for sk_type in taxonomy.types]
    base, extra = divmod(n, len(type_ids))
    lucky = set(random.Random(f"{seed}:remainder:{category}").sample(type_ids, extra))
    return {type_id: base + (type_id in lucky) for type_id in type_ids}


def draw_reasons(taxonomy: Taxonomy, type_id: str, k: int, seed: int) -> list[str]:
    """``k`` reason ids of type ``type_id``: shuffled rounds over the type's reasons."""
    rng = random.Random(f"{seed}:reasons:{type_id}")
    reasons = [reason.id for reason in taxonomy.type_by_id(type_id).reasons]
    out: list[str] = []
    while len(out) < k:
        round_ = list(reasons)
        rng.shuffle(round_)
        out.extend(round_)
    return out[:k]


def plan_slots(
    n_per_class: int,
    styles: Sequence[Style] = ("vanilla",),
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
) -> list[Slot]:
    """The balanced plan: ``n_per_class`` slots per class and per style (see module doc)."""
    taxonomy = taxonomy or load_taxonomy()
    unknown = [style for style in styles if style not in STYLES]
    if unknown or not styles:
        raise NabenchError(f"styles must be a non-empty list of {', '.join(STYLES)}: {unknown}")
    if len(set(styles)) != len(styles):
        raise NabenchError(f"styles repeat: {list(styles)}")
    base: list[tuple[str, str, str | None, int, int]] = []
    for category in CLASSES:
        counts = type_counts(n_per_class, taxonomy, seed, category)
        for sk_type in taxonomy.types:
            k = counts[sk_type.id]
            reasons: list[str | None] = (
                list(draw_reasons(taxonomy, sk_type.id, k, seed))
                if category == "infeasible"
                else [None] * k
            )
            for index, reason_id in enumerate(reasons, start=1):
                base.append((category, sk_type.id, reason_id, index, k))
    slots: list[Slot] = []
    for style in styles:
        for category, type_id, reason_id, index, count in base:
            task_id = f"{style}-{category}-{type_id}-{index:03d}"
            slots.append(
                Slot(
                    slot_id=len(slots),
                    task_id=task_id,
                    style=style,
                    category=category,
                    type_id=type_id,
                    reason_id=reason_id,
                    index=index,
                    count=count,
                    request_seed=random.Random(f"{seed}:request:{task_id}").randrange(2**31),
                )
            )
    return slots


# -- settings and requests ------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationSettings:
    """How tasks are generated (the recipe's ``generator`` section minus the backend)."""

    n_per_class: int
    styles: tuple[Style, ...] = ("vanilla",)
    seed: int = 0
    temperature: float = 1.0
    max_tokens: int = 256
    max_task_chars: int = 400
    max_analysis_chars: int = 300
    max_attempts: int = 3
    batch_size: int = 1
    chunk_size: int = 8
    refill_rounds: int = 0  # extra rounds that re-ask every slot quarantined in the last one

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.chunk_size < 1 or self.max_attempts < 1:
            raise NabenchError("batch_size, chunk_size and max_attempts must be >= 1")
        if self.refill_rounds < 0:
            raise NabenchError("refill_rounds must be >= 0")


def _slot_text(slot: Slot, taxonomy: Taxonomy) -> SlotText:
    sk_type = taxonomy.type_by_id(slot.type_id)
    reason = None
    if slot.reason_id is not None:
        reason = next(r for r in sk_type.reasons if r.id == slot.reason_id)
    return SlotText(slot.category, sk_type, reason, slot.index, slot.count)


def group_slots(slots: Sequence[Slot], batch_size: int) -> list[list[Slot]]:
    """Consecutive slots of one style, at most ``batch_size`` per request."""
    groups: list[list[Slot]] = []
    for slot in slots:
        if groups and groups[-1][0].style == slot.style and len(groups[-1]) < batch_size:
            groups[-1].append(slot)
        else:
            groups.append([slot])
    return groups


def generation_request(
    group: Sequence[Slot],
    settings: GenerationSettings,
    prompts: PromptSet,
    taxonomy: Taxonomy,
) -> ChatRequest:
    """The request for one group of slots (one slot unless batching)."""
    style = group[0].style
    user = generation_prompt(prompts, style, [_slot_text(slot, taxonomy) for slot in group])
    return ChatRequest.chat(
        user,
        system=prompts.text("generation", "system"),
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=group[0].request_seed,
    )


# -- checks ----------------------------------------------------------------------------------


def is_no_reason(text: object) -> bool:
    """True for blank reasons and spellings of "no reason" (see :data:`NO_REASON_TEXTS`)."""
    return normalise_reason(text) in NO_REASON_TEXTS


def check_task(slot: Slot, value: dict[str, Any], taxonomy: Taxonomy) -> list[str]:
    """Quarantine reasons of one schema-valid generated task against its slot ([] = keep)."""
    reasons: list[str] = []
    if not str(value.get("task", "")).strip():
        reasons.append("empty_task")
    if normalise_reason(value.get("category")) != slot.category:
        reasons.append("category_mismatch")
    sk_type = taxonomy.find_type(value.get("type"))
    if sk_type is None:
        reasons.append("unknown_type")
    elif sk_type.id != slot.type_id:
        reasons.append("type_mismatch")
    reason_text = value.get("reason")
    if slot.category == "feasible":
        if not is_no_reason(reason_text):
            reasons.append("feasible_with_reason")
    else:
        reason = taxonomy.find_reason(reason_text)
        if reason is None:
            reasons.append("unknown_reason")
        elif reason.id != slot.reason_id:
            reasons.append("reason_mismatch")
    return reasons


def char_ngrams(text: str, n: int = 3) -> frozenset[str]:
    """Character ``n``-grams of the folded text (the whole text if shorter than ``n``)."""
    folded = normalise_reason(text)
    if len(folded) < n:
        return frozenset({folded}) if folded else frozenset()
    return frozenset(folded[i : i + n] for i in range(len(folded) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class DuplicateIndex:
    """Tasks kept so far; finds exact (folded) and near (3-gram Jaccard) duplicates."""

    threshold: float = NEAR_DUPLICATE_THRESHOLD
    _exact: dict[str, str] = field(default_factory=dict)
    _grams: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def check(self, task_id: str, text: str) -> tuple[str, str] | None:
        """``(reason, detail)`` if ``text`` duplicates a kept task, else keep it and ``None``."""
        folded = normalise_reason(text).replace(" ", "")
        if folded in self._exact:
            return "duplicate", f"same text as {self._exact[folded]}"
        grams = char_ngrams(text)
        best: tuple[float, str] | None = None
        for other_id, other in self._grams:
            small, large = sorted((len(grams), len(other)))
            if large and small / large < self.threshold:  # Jaccard <= small/large
                continue
            score = jaccard(grams, other)
            if score >= self.threshold and (best is None or score > best[0]):
                best = (score, other_id)
        if best is not None:
            return "near_duplicate", f"3-gram Jaccard {best[0]:.3f} with {best[1]}"
        self._exact[folded] = task_id
        self._grams.append((task_id, grams))
        return None


def find_duplicates(
    items: Iterable[tuple[str, str]], threshold: float = NEAR_DUPLICATE_THRESHOLD
) -> dict[str, tuple[str, str]]:
    """``{task_id: (reason, detail)}`` for each (task_id, text) duplicating an earlier one."""
    index = DuplicateIndex(threshold=threshold)
    found: dict[str, tuple[str, str]] = {}
    for task_id, text in items:
        hit = index.check(task_id, text)
        if hit is not None:
            found[task_id] = hit
    return found


# -- run -------------------------------------------------------------------------------------


@dataclass
class GenerationResult:
    """Kept tasks, quarantined slots and the run statistics of one generation run.

    ``shortfall``: per ``style/class/type`` cell, how many planned tasks are still missing
    after every refill round (empty when every cell met its quota).
    """

    tasks: pa.Table
    quarantine: pa.Table
    stats: RunStats
    plan: list[Slot]
    shortfall: dict[str, int] = field(default_factory=dict)

    @property
    def quarantine_counts(self) -> dict[str, int]:
        counts = Counter(self.quarantine.column("quarantine_reason").to_pylist())
        return {reason: counts[reason] for reason in QUARANTINE_REASONS if counts[reason]}


def _str(value: object) -> str:
    return "" if value is None else str(value)


def refill_seed(seed: int, task_id: str, round_: int) -> int:
    """The request seed of a slot's refill round (round 0 keeps the plan's seed)."""
    return random.Random(f"{seed}:request:{task_id}:refill:{round_}").randrange(2**31)


def refill_slots(slots: Sequence[Slot], seed: int, round_: int) -> list[Slot]:
    """The quarantined slots asked again in refill round ``round_``, each with a new seed (so
    a new, separately cached request)."""
    return [replace(s, request_seed=refill_seed(seed, s.task_id, round_)) for s in slots]


@dataclass(frozen=True)
class _Context:
    """What every round shares."""

    backend: Backend
    cache: ResponseCache
    settings: GenerationSettings
    taxonomy: Taxonomy
    prompts: PromptSet
    namespace: str
    progress: bool


def generation_batches(
    groups: list[list[Slot]], settings: GenerationSettings, prompts: PromptSet, taxonomy: Taxonomy
) -> list[JsonBatch]:
    """One JSON batch per (style, group size): its requests share a schema."""
    by_schema: dict[tuple[str, int], list[int]] = {}
    for g, group in enumerate(groups):
        by_schema.setdefault((group[0].style, len(group)), []).append(g)
    s = settings
    return [
        JsonBatch(
            members=members,
            requests=[generation_request(groups[g], s, prompts, taxonomy) for g in members],
            schema=generation_schema(
                style,  # type: ignore[arg-type]
                s.max_task_chars,
                s.max_analysis_chars,
                batch_size=size,
            ),
        )
        for (style, size), members in by_schema.items()
    ]


def generation_job(
    backend: Backend,
    cache: ResponseCache,
    settings: GenerationSettings,
    *,
    taxonomy: Taxonomy | None = None,
    prompts: PromptSet | None = None,
) -> JobPlan:
    """What the first round of `generate_tasks` would send (nothing is sent); refill rounds
    come on top, for slots whose task was quarantined."""
    taxonomy = taxonomy or load_taxonomy()
    prompts = prompts or load_prompts()
    plan = plan_slots(settings.n_per_class, settings.styles, settings.seed, taxonomy)
    batches = generation_batches(
        group_slots(plan, settings.batch_size), settings, prompts, taxonomy
    )
    cached = count_cached_batches(backend, cache, batches, _namespace(prompts, taxonomy))
    requests = sum(len(b.requests) for b in batches)
    return JobPlan(f"generate {len(plan):,} task(s)", backend.model_id, requests, cached)


def _namespace(prompts: PromptSet, taxonomy: Taxonomy) -> str:
    return f"{GENERATION_NAMESPACE}|prompts={prompts.version}|taxonomy={taxonomy.version}"


def _ask(ctx: _Context, groups: list[list[Slot]]) -> tuple[dict[int, JsonResult], RunStats]:
    """One JSON result per group (requests sharing a schema go together)."""
    s = ctx.settings
    return complete_json_batches(
        ctx.backend,
        ctx.cache,
        generation_batches(groups, s, ctx.prompts, ctx.taxonomy),
        total=len(groups),
        max_attempts=s.max_attempts,
        namespace=ctx.namespace,
        chunk_size=s.chunk_size,
        progress=ctx.progress,
    )


def _values(result: Any, size: int) -> tuple[list[dict[str, Any] | None], str]:
    """The task objects of one result (None where missing) and its analysis text."""
    if not result.valid:
        return [None] * size, ""
    analysis = _str(result.value.get("analysis"))
    if size > 1:  # a batched request: {"tasks": [...]}
        listed = list(result.value["tasks"])
        return [listed[i] if i < len(listed) else None for i in range(size)], analysis
    return [result.value], analysis


_DETAIL_KEYS = (
    ("category_mismatch", "category"),
    ("unknown_type", "type"),
    ("type_mismatch", "type"),
    ("unknown_reason", "reason"),
    ("reason_mismatch", "reason"),
    ("feasible_with_reason", "reason"),
)


def _verdict(
    slot: Slot, value: dict[str, Any] | None, result: Any, ctx: _Context, duplicates: Any
) -> tuple[list[str], str]:
    """Quarantine reasons of one slot's answer ([] = keep) and their detail."""
    if value is None:
        if not result.valid:
            return ["invalid_json"], _str(result.error)
        return ["missing_from_batch"], "batch returned fewer tasks"
    reasons = check_task(slot, value, ctx.taxonomy)
    detail = "; ".join(
        f"{name}: got {json.dumps(value.get(key), ensure_ascii=False)}"
        for name, key in _DETAIL_KEYS
        if name in reasons
    )
    if not reasons:
        hit = duplicates[slot.style].check(slot.task_id, str(value["task"]))
        if hit is not None:
            return [hit[0]], hit[1]
    return reasons, detail


def _row(
    slot: Slot,
    value: dict[str, Any] | None,
    result: Any,
    verdict: tuple[list[str], str],
    common: dict[str, Any],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """A ``tasks`` row (no reasons) or a ``quarantine`` row."""
    sk_type = common["taxonomy"].type_by_id(slot.type_id)
    planned_reason = (
        next(r.name for r in sk_type.reasons if r.id == slot.reason_id) if slot.reason_id else ""
    )
    row = {
        **{k: v for k, v in common.items() if k != "taxonomy"},
        **extra,
        "task_id": slot.task_id,
        "slot_id": slot.slot_id,
        "prompt_style": slot.style,
        "request_seed": slot.request_seed,
        "attempts": result.attempts,
        "raw_output": result.raw,
    }
    reasons, detail = verdict
    if not reasons:
        assert value is not None
        return {
            **row,
            "task": str(value["task"]).strip(),
            "category": slot.category,
            "type": sk_type.name,
            "type_id": sk_type.id,
            "reason": planned_reason,
            "reason_id": slot.reason_id or "",
        }
    got = {k: None if value is None else _str(value.get(k)) for k in ("task", "category", "type")}
    return {
        **row,
        **got,
        "quarantine_reason": reasons[0],
        "quarantine_reasons": reasons,
        "detail": detail,
        "reason": None if value is None else _str(value.get("reason")),
        "planned_category": slot.category,
        "planned_type": sk_type.name,
        "planned_reason": planned_reason,
        "valid_json": result.valid,
        "error": _str(result.error),
    }


def _run_round(
    ctx: _Context,
    slots: list[Slot],
    round_: int,
    duplicates: Any,
    common: dict[str, Any],
    out: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> tuple[list[Slot], RunStats]:
    """Ask for ``slots``; append kept and quarantined rows to ``out``; return the slots that
    are still unfilled."""
    groups = group_slots(slots, ctx.settings.batch_size)
    results, stats = _ask(ctx, groups)
    kept, quarantined = out
    unfilled: list[Slot] = []
    for g, group in enumerate(groups):
        result = results[g]
        values, analysis = _values(result, len(group))
        for slot, value in zip(group, values, strict=True):
            verdict = _verdict(slot, value, result, ctx, duplicates)
            extra = {"analysis": analysis, "refill_round": round_}
            row = _row(slot, value, result, verdict, common, extra)
            (quarantined if verdict[0] else kept).append(row)
            if verdict[0]:
                unfilled.append(slot)
    return unfilled, stats


def shortfall_by_cell(plan: Sequence[Slot], kept: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Missing tasks per ``style/class/type_id`` cell (cells that met their quota omitted)."""
    quota = Counter(f"{s.style}/{s.category}/{s.type_id}" for s in plan)
    have = Counter(f"{r['prompt_style']}/{r['category']}/{r['type_id']}" for r in kept)
    return {cell: n - have[cell] for cell, n in sorted(quota.items()) if have[cell] < n}


def generate_tasks(
    backend: Backend,
    cache: ResponseCache,
    settings: GenerationSettings,
    *,
    taxonomy: Taxonomy | None = None,
    prompts: PromptSet | None = None,
    progress: bool = False,
    duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD,
) -> GenerationResult:
    """Plan, ask ``backend`` (through ``cache``) for every slot, check and quarantine; then
    up to ``settings.refill_rounds`` rounds re-ask each quarantined slot with a new seed.

    Requests that share a schema (same style and batch size) go to
    :func:`~nabench.llm.complete_json` together, in chunks of ``settings.chunk_size``; each
    finished chunk is committed to ``cache``, so a killed run resumes where it stopped.
    Every attempt that failed stays in the quarantine table (``refill_round`` says which).
    """
    taxonomy = taxonomy or load_taxonomy()
    prompts = prompts or load_prompts()
    plan = plan_slots(settings.n_per_class, settings.styles, settings.seed, taxonomy)
    namespace = _namespace(prompts, taxonomy)
    ctx = _Context(backend, cache, settings, taxonomy, prompts, namespace, progress)
    common = {
        "prompt_version": prompts.version,
        "taxonomy_version": taxonomy.version,
        "generator_model": backend.model_id,
        "generator_backend": backend.name,
        "temperature": float(settings.temperature),
        "seed": settings.seed,
        "taxonomy": taxonomy,
    }
    kept: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    duplicates = {style: DuplicateIndex(threshold=duplicate_threshold) for style in STYLES}
    pending, stats = _run_round(ctx, list(plan), 0, duplicates, common, (kept, quarantined))
    rounds = 0
    while pending and rounds < settings.refill_rounds:
        rounds += 1
        again = refill_slots(pending, settings.seed, rounds)
        pending, more = _run_round(ctx, again, rounds, duplicates, common, (kept, quarantined))
        stats.total += more.total
        stats.add(more)
        for key, value in more.extra.items():  # per-round counts (valid, invalid, ...)
            if isinstance(value, int):
                stats.extra[key] = int(stats.extra.get(key, 0)) + value
    kept.sort(key=lambda r: r["slot_id"])  # plan order, whichever round filled the slot
    shortfall = shortfall_by_cell(plan, kept)
    stats.extra.update(
        {
            "slots": len(plan),
            "kept": len(kept),
            "quarantined": len(quarantined),
            "refill_rounds": rounds,
            "shortfall": shortfall,
            "quarantine_by_reason": dict(
                sorted(Counter(row["quarantine_reason"] for row in quarantined).items())
            ),
        }
    )
    return GenerationResult(
        tasks=pa.Table.from_pylist(kept, schema=TASKS_ARROW),
        quarantine=pa.Table.from_pylist(quarantined, schema=QUARANTINE_ARROW),
        stats=stats,
        plan=plan,
        shortfall=shortfall,
    )
