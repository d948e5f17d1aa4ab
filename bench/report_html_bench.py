"""Benchmark ``report.html``: 28 synthetic models × full MMLU (14,042 items) × 4 configs
(original, na_keyed, na_distractor, all_of_the_above): page size, and the time until the
headline table is visible in headless Chromium (Debian ``chromium`` via Playwright).

Items are a real MMLU-NA build (``--dataset``, or built here from ``../shared`` with
``nabench build mmlu-na --split test``); answers are seeded random letters against the
real keys (see ``_items`` for the items beyond the build's 13,312) with a few raw-output
phrasings, 5 % invalid, and a confidence per item for
half the models (the loglik runs' worst case for compression).

Baselines measured in the same run:

* size: the item data as row-oriented JSON records (one object per response row), what
  a straightforward page would embed;
* time: the same page with that data as plain JSON in a ``<script>`` in ``<head>`` (the
  browser parses it before it shows the table). Built from the first
  ``--naive-models`` models and scaled linearly in size (the page itself is loaded).

Run: ``python bench/report_html_bench.py [--models 28] [--items 14042] [--dataset DIR]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source tree

from nabench.evaluation.report import write_report

CONFIGS = ("original", "na_keyed", "na_distractor", "all_of_the_above")
PHRASES = ("Answer: {}", "The answer is ({}).", "{}", "I think {} is correct.")
MMLU = Path(__file__).resolve().parents[2] / "shared" / "data" / "cais__mmlu"


def build_dataset(out: Path) -> Path:
    cmd = ["nabench", "build", "mmlu-na", "--source", str(MMLU), "--labels", "none"]
    subprocess.run([*cmd, "--split", "test", "--out", str(out), "--quiet"], check=True)
    return out


def _items(dataset: Path, config: str, n_items: int) -> pd.DataFrame:
    """The build's first ``n_items`` rows; when it has fewer (the NA build excludes 730 of
    MMLU's 14,042 test items), copies of its first rows with new ids and the question
    made distinct, so the dictionary coding gains nothing from them."""
    rows = pd.read_parquet(next((dataset / config).glob("*.parquet"))).iloc[:n_items]
    short = n_items - len(rows)
    if short <= 0:
        return rows
    extra = pd.concat([rows] * (short // len(rows) + 1)).iloc[:short].copy()
    extra["id"] = [f"mmlu/copy/test/{k:05d}" for k in range(short)]
    extra["question"] = [f"{q} (copy {k})" for k, q in enumerate(extra["question"])]
    return pd.concat([rows, extra], ignore_index=True)


def write_runs(root: Path, dataset: Path, n_models: int, n_items: int) -> None:
    rng = np.random.default_rng(0)
    for m in range(n_models):
        d = root / f"model{m:02d}"
        d.mkdir(parents=True)
        skill = 0.3 + 0.6 * m / max(1, n_models - 1)
        for config in CONFIGS:
            rows = _items(dataset, config, n_items)
            n, k = len(rows), rows["choices"].map(len).to_numpy()
            gold = rows["answer"].to_numpy()
            pick = np.where(rng.random(n) < skill, gold, rng.integers(0, k))
            invalid = rng.random(n) < 0.05
            letters = np.array(list("ABCDE"))[pick]
            phrase = rng.integers(0, len(PHRASES), n)
            raw = [
                "no idea" if bad else PHRASES[p].format(x)
                for x, p, bad in zip(letters, phrase, invalid, strict=True)
            ]
            conf = rng.uniform(0.25, 1.0, n) if m % 2 else np.full(n, np.nan)
            pd.DataFrame({
                "id": rows["id"], "source_id": rows["id"], "config": config,
                "model": f"model{m:02d}", "subject": rows["subject"], "raw_output": raw,
                "parsed": np.where(invalid, None, letters), "gold": np.array(list("ABCDE"))[gold],
                "correct": (pick == gold) & ~invalid, "invalid": invalid,
                "score": np.where(invalid, 0.25, (pick == gold) * 1.0), "confidence": conf,
                "n_choices": k,
            }).to_parquet(d / f"{config}.parquet", index=False)  # fmt: skip
            summary = {"config": config, "model": f"synthetic/model{m:02d}", "backend": "local",
                       "mode": "generate", "kind": "mc", "invalid_credit": 0.25,
                       "dataset": str(dataset), "revision": None,
                       "prompt_version": "bench"}  # fmt: skip
            (d / f"{config}.summary.json").write_text(json.dumps(summary))


def naive_records(root: Path, n_models: int) -> str:
    frames = [pd.read_parquet(f) for f in sorted(root.glob("model*/*.parquet"))]
    df = pd.concat(frames[: n_models * len(CONFIGS)])
    cols = ["model", "config", "id", "subject", "parsed", "correct", "invalid", "confidence"]
    return df[[*cols, "raw_output"]].to_json(orient="records")


def time_to_headline(browser: object, page_path: Path) -> tuple[float, float, float]:
    """(wall s until #headline is visible, first contentful paint s, s until data ready)."""
    pg = browser.new_page()  # type: ignore[attr-defined]
    requests: list[str] = []
    pg.route("**/*", lambda r: (requests.append(r.request.url), r.continue_()))
    t0 = time.perf_counter()
    pg.goto(page_path.as_uri(), wait_until="commit", timeout=120_000)
    pg.wait_for_selector("#headline", state="visible", timeout=120_000)
    shown = time.perf_counter() - t0
    fcp = pg.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1")
    ready = -1.0
    if pg.locator("#nabench-data").count():
        pg.wait_for_selector("body[data-ready='1']", state="attached", timeout=120_000)
        ready = time.perf_counter() - t0
    assert len(requests) == 1, requests  # the file itself, nothing else
    pg.close()
    return shown, fcp / 1000, ready


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=28)
    ap.add_argument("--items", type=int, default=14_042)
    ap.add_argument("--naive-models", type=int, default=4)
    ap.add_argument("--dataset", type=Path, help="a built MMLU-NA folder (else built here)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        dataset = args.dataset or build_dataset(tmpd / "mmlu-na")
        write_runs(tmpd / "results", dataset, args.models, args.items)
        t = time.perf_counter()
        write_report([tmpd / "results"], tmpd / "report")
        report_s = time.perf_counter() - t
        page = tmpd / "report" / "report.html"
        size = page.stat().st_size
        naive_json = naive_records(tmpd / "results", args.naive_models)
        naive_size = len(naive_json.encode()) * args.models / args.naive_models
        html = page.read_text("utf-8")
        naive_page = tmpd / "naive.html"
        naive_page.write_text(
            html.replace("<head>", f"<head><script>const DATA = {naive_json};</script>", 1)
        )
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=shutil.which("chromium"), args=["--no-sandbox"]
            )
            ours = time_to_headline(browser, page)
            naive = time_to_headline(browser, naive_page)
            browser.close()
    print(f"{args.models} models × {args.items} items × {len(CONFIGS)} configs; "
          f"nabench report (with report.html and plots) {report_s:.1f} s")  # fmt: skip
    print(f"report.html: {size / 1e6:.1f} MB (limit 30 MB); naive row JSON "
          f"{naive_size / 1e6:.1f} MB (x{args.models / args.naive_models:.0f} from "
          f"{args.naive_models} models); ratio naive / ours {naive_size / size:.1f}x")  # fmt: skip
    print(f"headline visible: {ours[0]:.2f} s (first paint {ours[1]:.2f} s; limit 3 s); "
          f"item browser ready {ours[2]:.2f} s")  # fmt: skip
    print(f"naive page ({args.naive_models} models' JSON in <head>): headline visible "
          f"{naive[0]:.2f} s; ratio naive / ours {naive[0] / ours[0]:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
