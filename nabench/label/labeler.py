"""NA-applicability labeling: guideline prompt -> backend (batched, cached) -> label records."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from nabench.label.checks import check_transport, label_job
from nabench.label.guideline import Guideline, format_item
from nabench.label.records import LABEL_ARROW
from nabench.llm import (
    Backend,
    ChatRequest,
    ChunkHook,
    JobPlan,
    ResponseCache,
    complete_json,
    count_cached,
)
from nabench.llm.options import engine_record


@dataclass(frozen=True)
class LabelRun:
    """Labels for a batch of items plus what the run cost."""

    table: pa.Table
    stats: dict[str, Any]


def label_requests(items: pa.Table, guideline: Guideline, max_tokens: int) -> list[ChatRequest]:
    """One chat request per item; the guideline + examples system message is a shared prefix."""
    system = guideline.system_prompt()
    return [
        ChatRequest.chat(format_item(q, c), system=system, max_tokens=max_tokens, temperature=0.0)
        for q, c in zip(
            items.column("question").to_pylist(), items.column("choices").to_pylist(), strict=True
        )
    ]


def _namespace(guideline: Guideline) -> str:
    return f"guideline:{guideline.name}:{guideline.version}"


def label_plan(
    items: pa.Table,
    backend: Backend,
    cache: ResponseCache,
    guideline: Guideline,
    max_tokens: int = 128,
) -> JobPlan:
    """What `label_items` would send to the model for `items` (nothing is sent)."""
    requests = label_requests(items, guideline, max_tokens)
    cached = count_cached(
        backend, cache, requests, guideline.output_schema(), _namespace(guideline)
    )
    return label_job(f"{backend.name}:{backend.model_id}", len(requests), cached)


def label_items(
    items: pa.Table,
    backend: Backend,
    cache: ResponseCache,
    guideline: Guideline,
    *,
    max_attempts: int = 3,
    max_tokens: int = 128,
    chunk_size: int = 16,
    progress: bool = True,
    max_error_share: float = 0.0,
    on_chunk: ChunkHook | None = None,
) -> LabelRun:
    """Label every item; invalid outputs become records with `valid=False`, never guesses.

    More than `max_error_share` of the requests without an answer (an outage) raises
    `LabelingFailed` instead of returning a run of invalid labels.
    """
    t0 = time.perf_counter()
    requests = label_requests(items, guideline, max_tokens)
    results, stats = complete_json(
        backend,
        cache,
        requests,
        guideline.output_schema(),
        max_attempts=max_attempts,
        namespace=_namespace(guideline),
        chunk_size=chunk_size,
        progress=progress,
        check=guideline.contradiction,
        on_chunk=on_chunk,
    )
    check_transport(
        results,
        max_error_share,
        f"{backend.name}:{backend.model_id}",
        "check that the model server answers (labels.llm.base_url), or allow a share of "
        "failures with labels.llm.max_error_share",
    )
    rows: dict[str, list[Any]] = {name: [] for name in LABEL_ARROW.names}
    for item_id, req, res in zip(items.column("id").to_pylist(), requests, results, strict=True):
        value = res.value if res.valid else None
        rule = value.get("rule") if value else None
        rows["id"].append(item_id)
        rows["na_applicable"].append(value["na_applicable"] if value else None)
        rows["rule"].append(None if rule in (None, "none") else rule)
        rows["rationale"].append(value.get("rationale") if value else None)
        rows["model"].append(backend.model_id)
        rows["backend"].append(backend.name)
        rows["guideline_version"].append(guideline.version)
        rows["prompt_sha256"].append(hashlib.sha256(req.canonical_json().encode()).hexdigest())
        rows["raw_output"].append(res.raw or "")
        rows["valid"].append(bool(res.valid))
        rows["attempts"].append(int(res.attempts))
    table = pa.Table.from_pydict(rows, schema=LABEL_ARROW)
    elapsed = time.perf_counter() - t0
    summary = {
        "n": table.num_rows,
        "calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "invalid": int(table.num_rows - sum(rows["valid"])),
        "retries": stats.retries,
        "errors": stats.errors,
        "elapsed_s": round(elapsed, 3),
        "prompts_per_s": round(table.num_rows / elapsed, 3) if elapsed > 0 else None,
        "model": backend.model_id,
        "model_revision": backend.revision,
        "backend": backend.name,
        "engine": engine_record(backend),
        "guideline_version": guideline.version,
    }
    return LabelRun(table, summary)
