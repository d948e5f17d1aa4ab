"""Cached, chunked, resumable execution of a batch of requests on a backend."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from nabench.core.atomic import atomic_file
from nabench.core.errors import NabenchError
from nabench.core.redact import redact

from ._cache import ResponseCache
from ._engine import Engine, LocalEngine
from ._types import Backend, ChatRequest, Completion, RunStats

DEFAULT_CHUNK_SIZE = 32
# Called after each chunk with (requests done, requests to do, seconds so far): a caller
# turns the first call into a measured estimate of the whole job.
ChunkHook = Callable[[int, int, float], None]


class _Ticks:
    """Progress per finished request, from backend threads, never past what is done."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.shown = 0
        self.lock = threading.Lock()

    def tick(self) -> None:
        with self.lock:
            self.shown += 1
            self.bar.update(1)

    def catch_up(self, done: int) -> None:
        with self.lock:
            if self.shown < done:
                self.bar.update(done - self.shown)
                self.shown = done


def count_hits(
    backend: Backend, cache: ResponseCache, requests: Sequence[ChatRequest], namespace: str = ""
) -> tuple[int, int]:
    """(distinct requests, how many of them `run_cached` would answer from `cache`): what a
    plan reports (identical requests are sent once)."""
    keys = set(cache.backend_keys(backend, requests, namespace))
    return len(keys), len(cache.get_many(list(keys)))


def run_cached(
    backend: Backend,
    requests: Sequence[ChatRequest],
    cache: ResponseCache,
    namespace: str = "",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = True,
    sort_by_prefix: bool = True,
    engine: Engine | None = None,
    on_chunk: ChunkHook | None = None,
    label: str = "",
) -> tuple[list[Completion], RunStats]:
    """Complete `requests`, reading and filling `cache`; results in input order.

    Only cache misses reach the backend, through `engine` (default: the backend's own
    `engine`, else in-process chunks of `chunk_size`); each finished batch is committed
    before the next, so a killed run resumes where it stopped. Identical requests are sent
    once. With `sort_by_prefix` misses are ordered so that prompts sharing a prefix run back
    to back (llama.cpp and vLLM reuse the KV cache of the shared prefix).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    engine = engine or backend.engine or LocalEngine()
    t0 = time.perf_counter()
    retries0 = backend.counters.retries
    engine.recover(cache)  # results of a killed run, merged before misses are counted
    keys = cache.backend_keys(backend, requests, namespace)
    hits = cache.get_many(keys)
    results: list[Completion | None] = [hits.get(k) for k in keys]

    pending = _misses(keys, results, requests, sort_by_prefix)
    miss_keys = list(pending)
    work = [(k, requests[pending[k][0]]) for k in miss_keys]
    if work and backend.unavailable is not None:
        raise NabenchError(backend.unavailable)

    errors = done = 0
    bar = tqdm(
        total=len(miss_keys),
        disable=not progress or not miss_keys,
        desc=f"{backend.name}:{backend.model_id}{f' ({label})' if label else ''}",
        unit="req",
    )
    ticks = _Ticks(bar)
    backend.on_request_done = ticks.tick  # per finished request where the backend tells
    try:
        for finished in engine.dispatch(backend, work, chunk_size):
            cache.put_many([(k, backend.model_id, requests[pending[k][0]], c) for k, c in finished])
            for k, c in finished:
                errors += c.error is not None
                for i in pending[k]:
                    results[i] = c
            done += len(finished)
            ticks.catch_up(done)  # engines and backends that report per chunk only
            if on_chunk is not None:
                on_chunk(done, len(miss_keys), time.perf_counter() - t0)
    finally:
        backend.on_request_done = None
        bar.close()

    elapsed = time.perf_counter() - t0
    stats = RunStats(
        total=len(requests),
        calls=len(work),
        cache_hits=sum(1 for k in keys if k in hits),
        errors=errors,
        retries=backend.counters.retries - retries0,
        elapsed_s=elapsed,
        prompts_per_s=len(requests) / elapsed if elapsed > 0 else 0.0,
        extra=engine.describe() if engine.name != "local" else {},
    )
    out = [r for r in results if r is not None]
    if len(out) != len(requests):
        raise RuntimeError(f"{engine.name} engine left {len(requests) - len(out)} requests open")
    return out, stats


def _misses(
    keys: Sequence[str],
    results: Sequence[Completion | None],
    requests: Sequence[ChatRequest],
    sort_by_prefix: bool,
) -> dict[str, list[int]]:
    """Cache key -> the positions it fills, for each distinct miss (the first occurrence's
    request is sent), in prefix order when `sort_by_prefix`."""
    pending: dict[str, list[int]] = {}
    for i, (k, res) in enumerate(zip(keys, results, strict=True)):
        if res is None:
            pending.setdefault(k, []).append(i)
    if not sort_by_prefix:
        return pending
    return dict(sorted(pending.items(), key=lambda kv: requests[kv[1][0]].prefix_key()))


def write_json_atomic(data: Any, path: str | Path) -> Path:
    """Write `data` as JSON to `path` atomically (temp file in the same dir + os.replace);
    URL credentials anywhere in `data` are masked first (no record ever carries them)."""
    path = Path(path)
    data = redact(data, by_key=False).value
    with atomic_file(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    return path


def write_stats(stats: RunStats, path: str | Path) -> Path:
    """Write `stats` as JSON atomically."""
    return write_json_atomic(stats.to_dict(), path)
