"""Benchmark the evaluation layer: vectorised paths vs naive per-item Python loops.

(a) parse + score of 14,042 simulated raw generations (MMLU test size);
(b) panel metrics on a seeded simulated 100-model × 14,042-item response matrix:
    KR-20 overall and per MMLU category, discrimination index and item-rest
    correlation per item, Pearson/Spearman between per-category model accuracies;
(c) evaluator overhead per item, model time excluded: the full 14,042-item MMLU-NA
    `original` config answered by the reference ``oracle`` strategy, then parse + score +
    summary + atomic parquet/JSON write through the `nabench eval` code path
    (:func:`score_outputs`, :func:`summarise`, :func:`write_config_results`) vs a naive
    per-row loop (``parse_answer`` / ``score_generation`` / a dict per row, then the
    same parquet and summary).

Run: ``python bench/eval_bench.py [--naive-items N] [--build DIR]`` from the repository
root (``--build``: an existing full mmlu-na build; otherwise one is built in a temp dir).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source tree

from nabench.evaluation import (
    discrimination_index,
    item_rest_correlation,
    kr20,
    kr20_by_group,
    mmlu_category,
    parse_answer,
    parse_answers,
    pearson,
    score_codes,
    score_generation,
    spearman,
)

N_ITEMS = 14_042
N_MODELS = 100
LETTERS = "ABCD"
WORDS = ("the", "of", "answer", "because", "option", "is", "wrong", "right", "cell", "law")
MMLU_TEST = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/cais__mmlu/all/test-00000-of-00001.parquet"
)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time over ``repeat`` runs, and the last result."""
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# ---------------------------------------------------------------- (a) parse + score


def simulate_outputs(rng: np.random.Generator, n: int) -> tuple[list[str], np.ndarray]:
    """Raw generations in the shapes models really produce, ~10 % invalid."""
    gold = rng.integers(0, 4, size=n)
    pred = np.where(rng.random(n) < 0.6, gold, rng.integers(0, 4, size=n))
    kind = rng.choice(7, size=n, p=[0.45, 0.15, 0.15, 0.05, 0.08, 0.07, 0.05])
    out: list[str] = []
    for p, k in zip(pred.tolist(), kind.tolist(), strict=True):
        letter = LETTERS[p]
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12))).tolist())
        out.append(
            (
                f"Answer: {letter}",
                f"Answer: ({letter})",
                f"Answer: {letter}. Because {words}.",
                f" {letter}) {words}",
                f"I think the answer is {letter}",  # invalid: no marker, first token "I"
                f"Answer: {letter}\n\nQuestion: {words}?\nAnswer: {LETTERS[(p + 1) % 4]}",
                f"Answer: {words}",  # invalid
            )[k]
        )
    return out, gold


def naive_parse_score(texts: list[str], gold: np.ndarray) -> list[float]:
    gold_letters = [LETTERS[g] for g in gold.tolist()]
    return [
        score_generation(parse_answer(t, 4), g) for t, g in zip(texts, gold_letters, strict=True)
    ]


def fast_parse_score(texts: list[str], gold: np.ndarray) -> np.ndarray:
    return score_codes(parse_answers(texts, 4), gold)


# ---------------------------------------------------------------- (b) panel metrics


def simulate_panel(rng: np.random.Generator, m: int, k: int) -> np.ndarray:
    """3-PL-like IRT responses: ability, difficulty, discrimination, 0.25 guessing."""
    theta = rng.normal(0.0, 1.0, size=(m, 1))
    b = rng.normal(0.0, 1.0, size=k)
    a = rng.lognormal(0.0, 0.4, size=k)
    prob = 0.25 + 0.75 / (1.0 + np.exp(-a * (theta - b)))
    return (rng.random((m, k)) < prob).astype(np.float64)


def item_categories(rng: np.random.Generator, k: int) -> tuple[np.ndarray, str]:
    if MMLU_TEST.is_file():
        import pandas as pd

        subjects = pd.read_parquet(MMLU_TEST, columns=["subject"])["subject"].to_numpy()
        if subjects.size == k:
            cats = np.array([mmlu_category(s) for s in subjects], dtype=object)
            return cats, "real MMLU test subjects"
    cats = rng.choice(np.array(["stem", "humanities", "social_sciences", "other"], dtype=object), k)
    return cats, "random categories (MMLU data not found)"


def fast_panel(x: np.ndarray, cats: np.ndarray) -> dict[str, Any]:
    by_group = kr20_by_group(x, cats)
    d = discrimination_index(x)
    r_ir = item_rest_correlation(x)
    names = sorted(by_group)
    acc = {c: x[:, cats == c].mean(axis=1) for c in names}
    corr = {
        (c1, c2): (pearson(acc[c1], acc[c2]).r, spearman(acc[c1], acc[c2]).r)
        for i, c1 in enumerate(names)
        for c2 in names[i + 1 :]
    }
    return {"kr20": kr20(x), "kr20_by_group": by_group, "d": d, "item_rest": r_ir, "corr": corr}


def _py_kr20(rows: list[list[float]], cols: list[int]) -> float:
    m, k = len(rows), len(cols)
    if k < 2:
        return math.nan
    pq = 0.0
    for j in cols:
        p = sum(r[j] for r in rows) / m
        pq += p * (1.0 - p)
    totals = [sum(r[j] for j in cols) for r in rows]
    mean = sum(totals) / m
    var = sum((t - mean) ** 2 for t in totals) / m
    return math.nan if var == 0 else k / (k - 1) * (1.0 - pq / var)


def _py_weights(totals: list[float], n_group: int, top: bool) -> list[float]:
    ordered = sorted(totals, reverse=top)
    cutoff = ordered[n_group - 1]
    beyond = [(t > cutoff) if top else (t < cutoff) for t in totals]
    tied = [t == cutoff for t in totals]
    share = (n_group - sum(beyond)) / sum(tied)
    return [1.0 if b else (share if t else 0.0) for b, t in zip(beyond, tied, strict=True)]


def _py_pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return math.nan if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def _py_ranks(x: list[float]) -> list[float]:
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def naive_panel(rows: list[list[float]], cats: list[str]) -> dict[str, Any]:
    """Same metrics in plain Python loops over lists (the pre-numpy baseline)."""
    m, k = len(rows), len(rows[0])
    names = sorted(set(cats))
    cols = {c: [j for j in range(k) if cats[j] == c] for c in names}
    totals = [round(sum(r), 9) for r in rows]
    n_group = max(1, min((27 * m + 50) // 100, m // 2))
    up = _py_weights(totals, n_group, top=True)
    lo = _py_weights(totals, n_group, top=False)
    d = []
    item_rest = []
    for j in range(k):
        u = sum(w * r[j] for w, r in zip(up, rows, strict=True))
        low = sum(w * r[j] for w, r in zip(lo, rows, strict=True))
        d.append((u - low) / n_group)
        col = [r[j] for r in rows]
        rest = [t - c for t, c in zip(totals, col, strict=True)]
        item_rest.append(_py_pearson(col, rest))
    acc = {c: [sum(r[j] for j in cols[c]) / len(cols[c]) for r in rows] for c in names}
    corr = {
        (c1, c2): (
            _py_pearson(acc[c1], acc[c2]),
            _py_pearson(_py_ranks(acc[c1]), _py_ranks(acc[c2])),
        )
        for i, c1 in enumerate(names)
        for c2 in names[i + 1 :]
    }
    return {
        "kr20": _py_kr20(rows, list(range(k))),
        "kr20_by_group": {c: _py_kr20(rows, cols[c]) for c in names},
        "d": np.array(d),
        "item_rest": np.array(item_rest),
        "corr": corr,
    }


def check_same(fast: dict[str, Any], naive: dict[str, Any]) -> None:
    assert math.isclose(fast["kr20"], naive["kr20"], rel_tol=1e-9)
    for c, v in naive["kr20_by_group"].items():
        assert math.isclose(fast["kr20_by_group"][c], v, rel_tol=1e-9), c
    np.testing.assert_allclose(fast["d"], naive["d"], atol=1e-9)
    np.testing.assert_allclose(fast["item_rest"], naive["item_rest"], atol=1e-9)
    for key, (p, s) in naive["corr"].items():
        assert math.isclose(fast["corr"][key][0], p, abs_tol=1e-9)
        assert math.isclose(fast["corr"][key][1], s, abs_tol=1e-9)


# ----------------------------------------------------------- (c) evaluator overhead


def _mmlu_original(build: Path | None, tmp: Path) -> pd.DataFrame:
    from nabench.pipelines.registry import load_recipe, run_recipe
    from nabench.pipelines.skeleton import BuildOptions

    if build is None:
        build = tmp / "mmlu-na"
        run_recipe(
            load_recipe("mmlu-na"),
            BuildOptions(
                source=str(MMLU_TEST.parents[1]), out=build, labels="none", progress=False
            ),
        )
    return pd.read_parquet(next((build / "original").glob("*.parquet")))


def naive_finish(items: Any, raw: list[str], out: Path) -> float:
    """Per-row loop: parse, score, one dict per row; then parquet + summary."""
    from nabench.evaluation import wilson_interval

    records = []
    for i, text in enumerate(raw):
        n_choices = len(items.batch.choices[i])
        gold = "ABCDEFGHIJ"[int(items.batch.gold[i])]
        pred = parse_answer(text, n_choices)
        score = score_generation(pred, gold)
        records.append(
            {"id": items.batch.ids[i], "config": items.config, "model": "reference/oracle",
             "subject": items.subjects[i], "raw_output": text, "parsed": pred, "gold": gold,
             "correct": pred == gold, "invalid": pred is None, "score": score,
             "confidence": math.nan, "n_choices": n_choices}
        )  # fmt: skip
    df = pd.DataFrame.from_records(records)
    df.to_parquet(out / "naive.parquet", index=False)
    acc = sum(r["correct"] for r in records) / len(records)  # accuracy: share correct
    lo, hi = wilson_interval(acc * len(records), len(records))
    (out / "naive.summary.json").write_text(json.dumps({"accuracy": acc, "ci": [lo, hi]}))
    return acc


def overhead_bench(build: Path | None, repeat: int) -> None:
    from nabench.evaluation.runner import (
        StrategyProducer,
        build_items,
        score_outputs,
        summarise,
        write_config_results,
    )
    from nabench.evaluation.strategies import get_strategy

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        t0 = time.perf_counter()
        df = _mmlu_original(build, tmp)
        t_load = time.perf_counter() - t0
        items = build_items("original", df)
        producer = StrategyProducer(get_strategy("oracle"))
        produced = producer.produce(items)  # the "model" step: not timed below
        n = len(items.batch)

        def fast() -> float:
            resp = score_outputs(items, produced, producer.model_id)
            summary = summarise(resp, config="original", model_id=producer.model_id,
                                run="reference_oracle", backend="reference", mode="generate",
                                invalid_credit=0.25, produced=produced)  # fmt: skip
            write_config_results(resp, summary, tmp / "fast")
            return float(summary["accuracy"])

        t_fast, acc_fast = timed(fast, repeat)
        t_naive, acc_naive = timed(lambda: naive_finish(items, produced.raw_outputs, tmp), repeat)
        assert acc_fast == acc_naive == 1.0
        print(f"\n(c) evaluator overhead, {n:,} MMLU-NA `original` items, reference oracle")
        print(
            f"    (build/load {t_load:.1f} s; answer step {produced.elapsed_s * 1e3:.1f} ms, "
            "not counted)"
        )
        print(
            f"    naive per-row loop  : {t_naive * 1e3:8.1f} ms ({t_naive / n * 1e6:.2f} µs/item)"
        )
        print(f"    eval pipeline       : {t_fast * 1e3:8.1f} ms ({t_fast / n * 1e6:.2f} µs/item)")
        print(
            f"    ratio naive / fast  : {t_naive / t_fast:8.1f}x   "
            "(pipeline incl. a 2,000-resample bootstrap CI)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--naive-items", type=int, default=N_ITEMS, help="items for the naive panel")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build", type=Path, default=None, help="existing full mmlu-na build")
    ap.add_argument("--only-overhead", action="store_true", help="run part (c) only")
    args = ap.parse_args()
    if args.only_overhead:
        overhead_bench(args.build, args.repeat)
        return
    rng = np.random.default_rng(20240601)
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}; median of {args.repeat} runs")

    texts, gold = simulate_outputs(rng, N_ITEMS)
    t_naive, s_naive = timed(lambda: naive_parse_score(texts, gold), args.repeat)
    t_fast, s_fast = timed(lambda: fast_parse_score(texts, gold), args.repeat)
    assert np.array_equal(np.asarray(s_naive), s_fast), "fast and naive scores differ"
    n_unique = len(set(texts))
    print(f"\n(a) parse + score, {N_ITEMS:,} raw outputs ({n_unique:,} distinct strings)")
    print(
        f"    naive per-item loop : {t_naive * 1e3:8.1f} ms ({t_naive / N_ITEMS * 1e6:.2f} µs/item)"
    )
    print(
        f"    batched fast path   : {t_fast * 1e3:8.1f} ms ({t_fast / N_ITEMS * 1e6:.2f} µs/item)"
    )
    print(f"    speed-up            : {t_naive / t_fast:8.1f}x   mean score {s_fast.mean():.4f}")

    x = simulate_panel(rng, N_MODELS, N_ITEMS)
    cats, source = item_categories(rng, N_ITEMS)
    t_fast_panel, fast = timed(lambda: fast_panel(x, cats), args.repeat)
    print(f"\n(b) panel metrics, {N_MODELS} models × {N_ITEMS:,} items, categories: {source}")
    print(f"    vectorised (full)   : {t_fast_panel * 1e3:8.1f} ms  (target < 2000 ms)")
    parts = {
        "KR-20": lambda: kr20(x),
        "KR-20 by category": lambda: kr20_by_group(x, cats),
        "discrimination D": lambda: discrimination_index(x),
        "item-rest r": lambda: item_rest_correlation(x),
    }
    for name, fn in parts.items():
        print(f"      {name:<18}: {timed(fn, args.repeat)[0] * 1e3:8.1f} ms")

    k_sub = min(args.naive_items, N_ITEMS)
    x_sub, cats_sub = x[:, :k_sub], cats[:k_sub]
    rows, cat_list = x_sub.tolist(), cats_sub.tolist()
    t0 = time.perf_counter()
    naive = naive_panel(rows, cat_list)
    t_naive_panel = time.perf_counter() - t0
    check_same(fast_panel(x_sub, cats_sub) if k_sub < N_ITEMS else fast, naive)
    if k_sub < N_ITEMS:
        est = t_naive_panel * N_ITEMS / k_sub  # every naive step is linear in items
        print(
            f"    naive loops         : {t_naive_panel * 1e3:8.1f} ms on {k_sub:,} items "
            f"→ extrapolated {est * 1e3:,.0f} ms for {N_ITEMS:,} (linear in items)"
        )
    else:
        est = t_naive_panel
        print(f"    naive loops (full)  : {est * 1e3:8.1f} ms (single run)")
    print(f"    speed-up            : {est / t_fast_panel:8.1f}x   (results agree to 1e-9)")
    print(
        f"    KR-20 {fast['kr20']:.4f}; by category "
        + ", ".join(f"{c} {v:.4f}" for c, v in sorted(fast["kr20_by_group"].items()))
    )
    print(
        f"    D mean {fast['d'].mean():.3f} (min {fast['d'].min():.3f}, max {fast['d'].max():.3f});"
        f" item-rest r mean {np.nanmean(fast['item_rest']):.3f}"
    )
    overhead_bench(args.build, args.repeat)


if __name__ == "__main__":
    main()
