"""Throughput of `--engine ray` with 1 vs 2 llama.cpp endpoints, measured in one run.

Two llama-cpp-python servers (SmolLM2-135M, one thread each, so on two cores each gets a
core) answer the same N chat requests; the Ray engine (a local cluster) sends them to the
first server alone, then round-robin to both. Each run uses a fresh response cache, so every
request reaches a server. Prints requests/s of each and the ratio.

    python bench/ray_bench.py [--n 48] [--max-tokens 24] [--batch-size 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from nabench.llm import ChatRequest, RayEngine, ResponseCache, get_backend, local_server, run_cached


def _requests(n: int, max_tokens: int) -> list[ChatRequest]:
    return [
        ChatRequest.chat(f"Give one fact about the number {i}.", max_tokens=max_tokens)
        for i in range(n)
    ]


def _timed(urls: list[str], requests: list[ChatRequest], batch_size: int, tmp: Path) -> float:
    backend = get_backend("openai", base_url=urls[0])
    backend.engine = RayEngine(endpoints=urls, batch_size=batch_size, num_cpus=2)
    with ResponseCache(tmp / f"cache-{len(urls)}.sqlite") as cache:
        t0 = time.perf_counter()
        comps, stats = run_cached(backend, requests, cache, progress=False)
        elapsed = time.perf_counter() - t0
    assert stats.calls == len(requests) and all(c.ok for c in comps)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    requests = _requests(args.n, args.max_tokens)
    with (
        tempfile.TemporaryDirectory() as tmp,
        local_server(n_threads=1) as first,
        local_server(n_threads=1) as second,
    ):
        # warm-up: start the cluster and load both models once, outside the timings
        _timed([first, second], _requests(4, 4), args.batch_size, Path(tmp) / "warm")
        one = _timed([first], requests, args.batch_size, Path(tmp))
        two = _timed([first, second], requests, args.batch_size, Path(tmp))
    print(f"{args.n} requests, max_tokens={args.max_tokens}, batch_size={args.batch_size}")
    print(f"1 endpoint : {one:6.2f} s  {args.n / one:6.2f} req/s")
    print(f"2 endpoints: {two:6.2f} s  {args.n / two:6.2f} req/s")
    print(f"speed-up 2 vs 1 endpoint: {one / two:.2f}x")


if __name__ == "__main__":
    main()
