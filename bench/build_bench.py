"""Benchmark: `nabench build mmlu-na` on the full MMLU test split (no labels), over its floor.

The floor is what any build of these tables must spend: writing and hashing the same tables
with the same parquet settings (`write_parquet`: zstd 1, plain free-text columns, the
`huggingface` features cast, sha256) on as many writer threads as `StagingArea`, and nothing
else (no loading, audit, perturbation, validation, card or manifest). Both are measured in the
same run; the ratio nabench / floor is printed (goal: <= 1.3x).

    python bench/build_bench.py [--source ../shared/data/cais__mmlu] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.audit.patterns import clear_text_cache
from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.sources import get_source
from nabench.stage.hub_layout import MANIFEST, WRITERS, write_parquet

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "cais__mmlu"
GOAL = 1.3


def built_tables(out: Path) -> list[tuple[str, pa.Table]]:
    """Every parquet table of a finished build, read back into memory."""
    files = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    return [(rel, pq.read_table(out / rel)) for rel in files if rel.endswith(".parquet")]


def floor(tables: list[tuple[str, pa.Table]], out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to write + hash `tables` with the build's parquet settings and
    writer threads."""

    def one(item: tuple[str, pa.Table]) -> str:
        target = out / item[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_parquet(item[1], target)

    t0, c0 = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(one, tables))
    return time.perf_counter() - t0, time.process_time() - c0


def build_once(source: Path, out: Path) -> tuple[float, float, BuildResult]:
    """(wall, CPU) seconds of one full build, and its result."""
    options = BuildOptions(source=str(source), out=out, labels="none", progress=False)
    clear_text_cache()  # every build starts cold, as a `nabench build` process does
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_recipe(load_recipe("mmlu-na"), options)
    return time.perf_counter() - t0, time.process_time() - c0, result


def _line(label: str, runs: list[float]) -> str:
    shown = ", ".join(f"{x:.2f}" for x in runs)
    return f"{label}: {statistics.median(runs):.2f} s (median of {len(runs)}: {shown})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    # Warm the datasets cache so every build reads the same cached Arrow data.
    get_source("mmlu").load("test", location=str(args.source))
    builds: list[tuple[float, float]] = []
    floors: list[tuple[float, float]] = []
    phases = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            wall, cpu, result = build_once(args.source, Path(tmp) / f"b{i}")
            builds.append((wall, cpu))
            phases.append(result.timings)
            tables = built_tables(result.out)
            floors.append(floor(tables, Path(tmp) / f"f{i}"))
    rows = sum(t.num_rows for _, t in tables)
    print(f"tables: {len(tables)} parquet files, {rows} rows")
    for i, what in enumerate(("wall", "CPU")):  # CPU time is the steadier on a shared machine
        b = [x[i] for x in builds]
        f = [x[i] for x in floors]
        print(_line(f"nabench build, {what} (load, audit, perturb, validate, card, stage)", b))
        print(_line(f"floor, {what} (write + sha256 of the same tables, same settings)", f))
        ratio = statistics.median(b) / statistics.median(f)
        print(f"nabench / floor, {what}: {ratio:.2f}x (goal <= {GOAL}x)")
    best = phases[builds.index(min(builds))]
    print("nabench phases (fastest run): " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()))


if __name__ == "__main__":
    main()
