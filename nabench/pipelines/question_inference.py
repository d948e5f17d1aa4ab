"""Two-step question inference on a built artifact dataset.

Step 1 runs the `qi_step1` prompts on any backend (cached, resumable); the inferred question
is the completion's text before ``Answer:``. Step 2 (`qi_step2`) is the `full` prompt with
only the test example's question replaced by the inferred one (items without an inferred
question are left out and counted, or under `artifacts-paper` kept and scored as invalid
answers by `nabench eval`, never sent); the control `qi_random_question` inserts another item's
real question, chosen by a seeded derangement (no item keeps its own). The raw step-1
completions are kept as `qi_step1_outputs`. The build is re-staged (atomically) with the new
configs, an updated card and a manifest section `question_inference`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.core.errors import NabenchError, ValidationFailed
from nabench.core.rng import item_rng
from nabench.llm import Backend, ChatRequest, ResponseCache, RunStats, run_cached
from nabench.perturb.artifacts.question_inference import (
    extract_inferred_question,
    grouped_derangement,
    replace_test_question,
    seeded_derangement,
)
from nabench.pipelines.artifacts import ARTIFACT_USES, artifacts_card
from nabench.pipelines.driver import card_renderer, previous_release
from nabench.schemas.manifest import Manifest, read_manifest_file
from nabench.schemas.protocol import ArtifactsPreset, protocols
from nabench.stage.croissant import CardFacts
from nabench.stage.hub_layout import MANIFEST, StagedTable, StagingArea, row_counts
from nabench.validate.invariants import summarise_violations
from nabench.validate.kinds import validate_artifacts

STEP1_CONFIG = "qi_step1"
STEP2_CONFIG = "qi_step2"
RANDOM_CONFIG = "qi_random_question"
OUTPUTS_CONFIG = "qi_step1_outputs"
NEW_CONFIGS = (STEP2_CONFIG, RANDOM_CONFIG, OUTPUTS_CONFIG)
DEFAULT_MAX_TOKENS = 96  # nabench's step-1 budget (ArtifactsPreset.qi_step1_max_tokens)
CACHE_NAMESPACE = "nabench.artifacts.qi_step1"


@dataclass(frozen=True)
class QuestionInferenceResult:
    out: Path
    counts: dict[str, dict[str, int]]
    items: int
    inferred: int
    missing: int
    errors: int
    stats: RunStats


def read_build(built: Path) -> tuple[Manifest, list[StagedTable]]:
    """The manifest and every table of a staged artifact build."""
    path = built / MANIFEST
    if not path.is_file():
        raise NabenchError(f"{built}: no {MANIFEST} (not a nabench build)")
    manifest = read_manifest_file(path)  # bounded; a one-line error if it is not a manifest
    if manifest.kind != "artifacts":
        raise NabenchError(f"{built}: not an artifacts build (kind {manifest.kind!r})")
    tables: list[StagedTable] = []
    for rel in manifest.files:
        config, _, name = rel.partition("/")
        if not name.endswith(".parquet"):
            continue
        split = name.split("-00000-of-")[0]
        tables.append(StagedTable(config, split, pq.read_table(built / rel)))
    return manifest, tables


def step1_requests(step1: pa.Table, max_tokens: int, min_tokens: int = 0) -> list[ChatRequest]:
    """Raw completion requests for the step-1 prompts (greedy, with each row's stop)."""
    return [
        ChatRequest(
            prompt=p, stop=(s,), max_tokens=max_tokens, min_tokens=min_tokens, temperature=0.0
        )
        for p, s in zip(
            step1.column("prompt").to_pylist(), step1.column("stop").to_pylist(), strict=True
        )
    ]


def build_preset(manifest: Manifest) -> ArtifactsPreset:
    """The artifacts settings of the protocol the build followed (nabench's for old builds).
    A setting the build's record predates (step 1's token bounds) is the named preset's
    today, so an `artifacts-paper` build of an earlier version still decodes as the paper."""
    record = manifest.protocol or {}
    recorded = record.get("artifacts")
    if not recorded:
        return ArtifactsPreset()
    current = protocols().get(str(record.get("name")))
    base = current.artifacts.model_dump() if current and current.artifacts else {}
    return ArtifactsPreset.model_validate({**base, **recorded})


def control_permutation(
    aligned: pa.Table, preset: ArtifactsPreset, rng: random.Random
) -> list[int]:
    """Whose real question each item of the random-question control shows: a derangement
    over the split, or within each subject (the `artifacts-paper` protocol)."""
    if preset.random_question_within == "subject":
        return grouped_derangement(aligned.column("subject").to_pylist(), rng)
    return seeded_derangement(aligned.num_rows, rng)


def _align(full: pa.Table, ids: Sequence[str]) -> pa.Table:
    index = {item_id: i for i, item_id in enumerate(full.column("id").to_pylist())}
    missing = [i for i in ids if i not in index]
    if missing:
        raise NabenchError(f"{len(missing)} qi_step1 item(s) have no `full` row, e.g. {missing[0]}")
    return full.take(pa.array([index[i] for i in ids], pa.int64()))


def run_step1(
    step1: pa.Table,
    backend: Backend,
    cache: ResponseCache,
    tokens: tuple[int, int],
    progress: bool,
) -> tuple[pa.Table, RunStats]:
    """Step 1 of one split on `backend` (cached; `tokens`: min and max new tokens): the
    `qi_step1_outputs` table (each row with its completion and the question inferred from
    it) and the run's statistics."""
    if step1.num_rows < 2:
        raise NabenchError("question inference needs at least 2 items (random control)")
    requests = step1_requests(step1, tokens[1], tokens[0])
    comps, stats = run_cached(
        backend, requests, cache, namespace=CACHE_NAMESPACE, progress=progress
    )
    columns = {
        "completion": [c.text if c.ok else None for c in comps],
        "finish_reason": [c.finish_reason for c in comps],
        "inferred_question": [extract_inferred_question(c.text) if c.ok else None for c in comps],
        "model_id": [backend.model_id] * len(comps),
        "error": [c.error for c in comps],
    }
    for name, values in columns.items():
        step1 = step1.append_column(name, pa.array(values, pa.string()))
    return step1, stats


def step2_configs(
    split: str, outputs: pa.Table, full: pa.Table, preset: ArtifactsPreset, rng: random.Random
) -> list[StagedTable]:
    """Step 2 (`full` with each inferred question) and the random-question control (another
    item's real question, `rng` choosing whose) of one split, from its step-1 outputs."""
    ids = outputs.column("id").to_pylist()
    aligned = _align(full, ids)
    inferred = outputs.column("inferred_question").to_pylist()
    step2 = replace_test_question(
        aligned, inferred, ids, STEP2_CONFIG, text=preset.text, keep_missing=preset.qi_keep_missing
    )
    perm = control_permutation(aligned, preset, rng)
    real = aligned.column("question").to_pylist()
    control = replace_test_question(
        aligned, [real[j] for j in perm], [ids[j] for j in perm], RANDOM_CONFIG, text=preset.text
    )
    return [StagedTable(STEP2_CONFIG, split, step2), StagedTable(RANDOM_CONFIG, split, control)]


def step1_counts(outputs: Sequence[pa.Table]) -> dict[str, int]:
    """Items, inferred questions, items without one and failed requests over every split."""
    items = sum(t.num_rows for t in outputs)
    inferred = items - sum(t.column("inferred_question").null_count for t in outputs)
    errors = items - sum(t.column("error").null_count for t in outputs)  # failed: has an error
    return {"items": items, "inferred": inferred, "missing": items - inferred, "errors": errors}


def infer_questions(
    built: Path,
    backend: Backend,
    cache: ResponseCache,
    *,
    out: Path | None = None,
    limit: int | None = None,
    max_tokens: int | None = None,
    progress: bool = True,
) -> QuestionInferenceResult:
    """Run step 1 on `backend`, build step 2 and the random-question control, re-stage.

    `limit` keeps the first N `qi_step1` rows of each split. `out` defaults to `built`
    (replaced atomically; earlier question-inference configs are replaced). Step 1 decodes
    the build protocol's `qi_step1_min_tokens`..`qi_step1_max_tokens` new tokens
    (`artifacts-paper`: 5..200, as the authors; nabench: 0..96); `max_tokens` overrides the
    upper bound.
    """

    built = Path(built)
    manifest, tables = read_build(built)
    tables = [t for t in tables if t.config not in NEW_CONFIGS]
    by_key = {(t.config, t.split): t.table for t in tables}
    splits = [t.split for t in tables if t.config == STEP1_CONFIG]
    if not splits:
        raise NabenchError(f"{built}: no {STEP1_CONFIG} config (add it to the recipe)")
    if manifest.seed is None or manifest.source is None:
        raise NabenchError(f"{built}: {MANIFEST} records no seed or source (not a nabench build)")
    seed, dataset = manifest.seed, str(manifest.source.dataset)
    preset = build_preset(manifest)
    tokens = (preset.qi_step1_min_tokens, max_tokens or preset.qi_step1_max_tokens)
    if tokens[0] > tokens[1]:
        raise NabenchError(f"--max-tokens {tokens[1]} is below the protocol's minimum {tokens[0]}")
    new: list[StagedTable] = []
    total = RunStats()
    for split in splits:  # split by split: a missing `full` stops before that split's calls
        full = by_key.get(("full", split))
        if full is None:
            raise NabenchError(f"{built}: step 2 needs the `full` config for split {split!r}")
        step1 = by_key[(STEP1_CONFIG, split)]
        if limit is not None:
            step1 = step1.slice(0, limit)
        outputs, stats = run_step1(step1, backend, cache, tokens, progress)
        total.total += stats.total
        total.add(stats)
        rng = item_rng(seed, f"{dataset}/{split}", RANDOM_CONFIG)
        new += step2_configs(split, outputs, full, preset, rng)
        new.append(StagedTable(OUTPUTS_CONFIG, split, outputs))

    k = (manifest.fewshot or {}).get("k")
    violations = validate_artifacts(new, text=preset.text, k=k).violations
    if violations:
        raise ValidationFailed(summarise_violations(violations))
    staged = tables + new
    counts = row_counts(staged)
    tally = step1_counts([t.table for t in new if t.config == OUTPUTS_CONFIG])
    fields = {k_: v for k_, v in manifest.record().items() if k_ != "files"}
    fields["counts"] = counts
    fields["question_inference"] = {
        "backend": backend.name,
        "model_id": backend.model_id,
        "min_tokens": tokens[0],
        "max_tokens": tokens[1],
        "temperature": 0.0,
        "limit": limit,
        **tally,
        "seed": seed,
        "derangement_rng": f'item_rng(seed, "{dataset}/<split>", "{RANDOM_CONFIG}")',
        "derangement_within": preset.random_question_within,
        "missing_kept": preset.qi_keep_missing,
        "cache_namespace": CACHE_NAMESPACE,
        "stats": total.to_dict(),
    }
    target = Path(out) if out is not None else built
    restage(target, staged, Manifest.model_validate(fields))
    new_counts = {c: counts[c] for c in NEW_CONFIGS}
    return QuestionInferenceResult(out=target, counts=new_counts, stats=total, **tally)


def restage(target: Path, staged: list[StagedTable], manifest: Manifest) -> None:
    """An artifact build staged again with its new configs, atomically; its card on top of
    the one in `target`, as a rebuild's is (hand-added metadata and changelog kept)."""
    recipe = manifest.recipe
    repo_id = recipe["publish"].get("repo_id") or f"ORG/{recipe['name']}"
    card = artifacts_card(manifest, staged)
    with StagingArea(target) as area:
        previous = previous_release(
            target, manifest.kind or "artifacts", recipe["name"], recipe["version"]
        )
        readme = card_renderer(previous, recipe["version"], repo_id, manifest, card)
        for st in staged:
            area.add(st)
        area.commit(readme, manifest, CardFacts(uses=ARTIFACT_USES))


__all__ = [
    "NEW_CONFIGS",
    "QuestionInferenceResult",
    "infer_questions",
    "read_build",
    "step1_requests",
]
