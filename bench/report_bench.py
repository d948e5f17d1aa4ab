"""Benchmark `nabench report`: 28 synthetic models × 14,042 items (MMLU test size) ×
4 configs (original, na_keyed, na_distractor, all_of_the_above), written as eval result
folders, then reported, against a naive per-item baseline measured in the same run.

* nabench: :func:`write_report` without plots (tables, headline with bootstrap CIs,
  panel statistics, report.md, report.json, the report.html item browser), and
  :func:`build_report` alone (in memory).
* naive: what a straightforward implementation does for the headline and the panel —
  per model and variant a Python loop pairing items in dicts and an index-resampling
  bootstrap of the paired difference (2,000 resamples), and KR-20 per category with a
  per-item category lookup. It runs on ``--naive-models`` models (default 2) and is
  extrapolated linearly to 28 (it is linear in models), so the run stays short.

Run: ``python bench/report_bench.py [--models 28] [--items 14042] [--naive-models 2]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source tree

from nabench.evaluation.categories import mmlu_category, mmlu_subject_categories
from nabench.evaluation.report import build_report, write_report
from nabench.evaluation.results import load_results

CONFIGS = ("original", "na_keyed", "na_distractor", "all_of_the_above")


def write_panel(root: Path, n_models: int, n_items: int, seed: int = 0) -> None:
    """Seeded synthetic eval results in the on-disk format `nabench eval` writes."""
    rng = np.random.default_rng(seed)
    subjects = sorted(mmlu_subject_categories())
    ids = [f"mmlu/all/test/{k:05d}" for k in range(n_items)]
    subj = [subjects[k * len(subjects) // n_items] for k in range(n_items)]
    gold = rng.integers(0, 4, n_items)
    difficulty = rng.normal(0, 1, n_items)
    for m in range(n_models):
        ability = -1.5 + 3.0 * m / max(1, n_models - 1)
        p = 1 / (1 + np.exp(-(ability - difficulty)))
        for j, config in enumerate(CONFIGS):
            correct = rng.random(n_items) < p * (1.0 - 0.1 * j)
            invalid = (~correct) & (rng.random(n_items) < 0.05)
            d = root / f"model{m:02d}"
            d.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({
                "id": ids, "source_id": ids, "subject": subj,
                "score": np.where(invalid, 0.25, correct * 1.0), "correct": correct,
                "invalid": invalid, "confidence": np.nan, "gold": ["ABCD"[g] for g in gold],
            }).to_parquet(d / f"{config}.parquet", index=False)  # fmt: skip
            summary = {"config": config, "model": f"model{m:02d}", "backend": "local",
                       "mode": "generate", "kind": "mc", "invalid_credit": 0.25}  # fmt: skip
            (d / f"{config}.summary.json").write_text(json.dumps(summary))


def naive(root: Path, n_models: int, resamples: int = 2000) -> None:
    """The naive headline + per-category KR-20 over ``n_models`` models."""
    res = load_results([root])
    r = res.responses
    runs = res.runs[:n_models]
    rng = np.random.default_rng(0)
    for run in runs:
        rows = r[r["run"] == run]
        base = {i: s for i, s in zip(rows.loc[rows["config"] == "original", "id"],
                rows.loc[rows["config"] == "original", "correct"] * 1.0, strict=True)}  # fmt: skip
        for config in CONFIGS[1:]:
            v = rows[rows["config"] == config]
            pairs = [(base[i], s) for i, s in zip(v["id"], v["correct"] * 1.0, strict=True)
                     if i in base]  # fmt: skip
            o = np.array([a for a, _ in pairs])
            w = np.array([b for _, b in pairs])
            diffs = []
            for _ in range(resamples // 100):  # blocks of 100 index resamples
                idx = rng.integers(0, len(pairs), (100, len(pairs)))
                diffs.extend((o[idx] - w[idx]).mean(axis=1))
            np.quantile(diffs, [0.025, 0.975])
    for config in CONFIGS:  # KR-20 per category, categories looked up per item
        sub = r[(r["config"] == config) & r["run"].isin(runs)]
        mat = sub.pivot(index="run", columns="id", values="correct").astype(float)
        subj = sub.drop_duplicates("id").set_index("id").loc[mat.columns, "subject"]
        cats: dict[str, list[int]] = {}
        for j, s in enumerate(subj):
            cats.setdefault(mmlu_category(s), []).append(j)
        for cols in cats.values():
            x = mat.to_numpy()[:, cols]
            p = x.mean(0)
            x.sum(1).var()
            (p * (1 - p)).sum()


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, cpu) seconds of one call."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=28)
    ap.add_argument("--items", type=int, default=14_042)
    ap.add_argument("--naive-models", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        t0 = time.perf_counter()
        write_panel(root, args.models, args.items)
        print(f"wrote {args.models} models × {args.items} items × {len(CONFIGS)} configs "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        full = timed(lambda: write_report([root], Path(tmp) / "report", plots=False))
        res = load_results([root])
        build = timed(lambda: build_report(res))
        scale = args.models / args.naive_models
        slow = tuple(x * scale for x in timed(lambda: naive(root, args.naive_models)))
    # CPU time is printed beside wall time: on a shared machine wall time mostly
    # measures the other processes.
    print(f"nabench report (load, tables, md, json, html; no plots): wall {full[0]:6.2f} s"
          f"  cpu {full[1]:6.2f} s")  # fmt: skip
    print(f"nabench build_report (in memory)                  : wall {build[0]:6.2f} s"
          f"  cpu {build[1]:6.2f} s")  # fmt: skip
    print(f"naive headline + KR-20 (x{scale:.0f} from {args.naive_models} models)   : "
          f"wall {slow[0]:6.2f} s  cpu {slow[1]:6.2f} s")  # fmt: skip
    print(f"ratio naive / nabench report: wall {slow[0] / full[0]:5.1f}x  "
          f"cpu {slow[1] / full[1]:5.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
