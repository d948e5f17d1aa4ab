"""Benchmark: `nabench build mmlu-na` on the full MMLU test split (no labels).

Prints the wall time of the columnar pipeline and of a naive row-by-row Python
implementation of the same build — the script a researcher would first write with the
same libraries: iterate the `datasets` rows, validate each with pydantic, audit, perturb
and check it in Python, then `Dataset.from_list(...).to_parquet(...)` per config — measured
in the same run, and their ratio.

    python bench/build_bench.py [--source ../shared/data/cais__mmlu] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from nabench.build import BuildOptions, build, make_builders
from nabench.recipes import load_recipe
from nabench.schemas.item import Item, PerturbedItem
from nabench.sources import get_source
from nabench.validate.eligibility import ALL_OPTION, NONE_OPTION

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "cais__mmlu"


def naive_build(source: Path, out: Path, seed: int) -> int:
    """The same build, one row at a time, the way a first script would do it."""
    recipe = load_recipe("mmlu-na")
    builders = make_builders(recipe)
    import datasets

    ds = datasets.load_dataset(str(source), "all", split="test")
    rows = [{"id": f"mmlu/all/test/{i:05d}", "source": "mmlu", **row} for i, row in enumerate(ds)]
    na_texts = {b.na_text.lower() for b in builders if hasattr(b, "na_text")}
    outputs: dict[str, list[dict]] = {b.config_name: [] for b in builders}
    excluded = []
    for row in rows:
        item = Item.model_validate(row)
        reason = None
        if len(item.choices) != 4:
            reason = "not_four_choices"
        elif any(not c.strip() for c in item.choices):
            reason = "empty_choice"
        elif len({c.strip() for c in item.choices}) != len(item.choices):
            reason = "duplicate_choices"
        elif any(NONE_OPTION.search(c) or c.strip().lower() in na_texts for c in item.choices):
            reason = "has_none_option"
        elif any(ALL_OPTION.search(c) for c in item.choices):
            reason = "has_all_option"
        if reason:
            excluded.append({**item.model_dump(), "reason": reason})
            continue
        for b in builders:
            choices = list(item.choices)
            replaced = None
            na_text = getattr(b, "na_text", None)
            if b.kind == "na_keyed":
                choices[item.answer] = na_text
                replaced = item.answer
            elif b.kind == "na_distractor":
                rng = random.Random(f"{seed}:na_distractor:{item.id}")
                replaced = rng.choice([i for i in range(4) if i != item.answer])
                choices[replaced] = na_text
            elif b.kind == "all_of_the_above":
                choices.append(na_text)
            else:
                na_text = None
            out_row = PerturbedItem(
                **item.model_dump(exclude={"choices"}),
                choices=choices,
                variant=b.kind,
                original_answer=item.answer,
                original_choices=item.choices,
                replaced_index=replaced,
                na_text=na_text,
                seed=seed,
            )
            # per-row invariant checks
            assert 0 <= out_row.answer < len(out_row.choices)
            assert len(set(out_row.choices)) == len(out_row.choices)
            if na_text:
                assert out_row.choices.count(na_text) == 1
            outputs[b.config_name].append(out_row.model_dump())
    for config, config_rows in outputs.items():
        folder = out / config
        folder.mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(config_rows).to_parquet(folder / "test-00000-of-00001.parquet")
    pd.DataFrame(excluded).to_parquet(out / "excluded.parquet")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    recipe = load_recipe("mmlu-na")
    # Warm the datasets cache so both sides read the same cached Arrow data.
    get_source("mmlu").load("test", location=str(args.source))
    fast, naive, phases = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            t0 = time.perf_counter()
            result = build(
                recipe,
                BuildOptions(
                    source=str(args.source), out=Path(tmp) / f"f{i}", labels="none", progress=False
                ),
            )
            fast.append(time.perf_counter() - t0)
            phases.append(result.timings)
            t0 = time.perf_counter()
            n = naive_build(args.source, Path(tmp) / f"n{i}", recipe.seed)
            naive.append(time.perf_counter() - t0)
    rows = sum(sum(c.values()) for c in result.counts.values())
    f, s = statistics.median(fast), statistics.median(naive)
    print(f"items: {n} source rows -> {rows} output rows in {len(result.counts)} configs")
    print(
        f"nabench build (columnar, incl. validation + staging): {f:.2f} s (median of "
        f"{args.repeat}: {', '.join(f'{x:.2f}' for x in fast)})"
    )
    print(
        f"naive row-by-row build:                               {s:.2f} s (median of "
        f"{args.repeat}: {', '.join(f'{x:.2f}' for x in naive)})"
    )
    print(f"ratio naive/nabench: {s / f:.1f}x")
    best = phases[fast.index(min(fast))]
    print("nabench phases (fastest run): " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()))


if __name__ == "__main__":
    main()
