"""Benchmark: `nabench build mmlu-na` on the full MMLU test split (no labels).

Prints the wall time of the columnar pipeline and of a naive row-by-row Python
implementation of the same build — the script a researcher would first write with the
same libraries: iterate the `datasets` rows, validate each with pydantic, audit, perturb
and check every invariant in Python, `Dataset.from_list(...).to_parquet(...)` per config,
then a card from `DatasetCardData` and a manifest with sha256 of every file — measured in
the same run, and their ratio.

    python bench/build_bench.py [--source ../shared/data/cais__mmlu] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from nabench.audit.eligibility import ALL_OPTION, NONE_OPTION
from nabench.pipelines.na import build, make_builders
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.schemas.item import Item, PerturbedItem
from nabench.sources import get_source
from nabench.validate.invariants import KNOWN_NA_TEXTS

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "cais__mmlu"
NA_PHRASES = {t.lower() for t in KNOWN_NA_TEXTS}


def naive_invariants(row: dict, original: dict | None, na_text: str | None) -> list[str]:
    """Every row rule `nabench validate` checks, in plain Python on one row."""
    choices, orig = row["choices"], row["original_choices"]
    kind, answer, gold = row["variant"], row["answer"], orig[row["original_answer"]]
    broken = []
    if not 0 <= answer < len(choices):
        broken.append("key_in_range")
    if any(not c.strip() for c in choices):
        broken.append("choices_non_empty")
    if len({c.strip() for c in choices}) != len(choices):
        broken.append("choices_distinct")
    if kind != "original" and choices.count(na_text) != 1:
        broken.append("na_exactly_once")
    if kind == "original":
        if any(c.strip().lower() in NA_PHRASES for c in choices):
            broken.append("no_na_in_original")
        if choices != orig or answer != row["original_answer"]:
            broken.append("original_unchanged")
    elif kind == "na_keyed":
        if choices[answer] != na_text or gold in choices:
            broken.append("na_keyed")
        if row["replaced_index"] != row["original_answer"] or answer != row["original_answer"]:
            broken.append("na_keyed_in_place")
    elif kind == "na_distractor":
        if choices[answer] != gold or answer != row["original_answer"]:
            broken.append("na_distractor_key_is_gold")
        if row["replaced_index"] == answer or choices[row["replaced_index"]] != na_text:
            broken.append("na_distractor_replaced_distractor")
    elif kind == "all_of_the_above" and (
        choices != [*orig, na_text] or answer != row["original_answer"]
    ):
        broken.append("aota")
    if original is None:
        broken.append("id_in_original")
    return broken


def naive_build(source: Path, out: Path, seed: int) -> int:
    """The same build, one row at a time, the way a first script would do it: the same
    configs, the same invariants, a card (`DatasetCardData`) and a manifest with hashes."""
    recipe = load_recipe("mmlu-na")
    builders = make_builders(recipe)
    import datasets
    from huggingface_hub import DatasetCardData

    ds = datasets.load_dataset(str(source), "all", split="test")
    rows = [{"id": f"mmlu/all/test/{i:05d}", "source": "mmlu", **row} for i, row in enumerate(ds)]
    na_texts = {b.text.lower() for b in builders if hasattr(b, "text")}
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
            outputs[b.config_name].append(out_row.model_dump())
    # Validate every row, then the cross-row rules (unique ids, each id in `original`).
    originals = {r["id"]: r for r in outputs["original"]}
    letters: dict[str, Counter] = {}
    for config, config_rows in outputs.items():
        seen: set[str] = set()
        for r in config_rows:
            problems = naive_invariants(r, originals.get(r["id"]), r["na_text"])
            if r["id"] in seen:
                problems.append("ids_unique")
            seen.add(r["id"])
            if problems:
                raise AssertionError(f"{config} {r['id']}: {problems}")
        letters[config] = Counter("ABCDE"[r["answer"]] for r in config_rows)
    files = {}
    for config, config_rows in outputs.items():
        folder = out / config
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "test-00000-of-00001.parquet"
        datasets.Dataset.from_list(config_rows).to_parquet(path)
        files[f"{config}/{path.name}"] = path
    (out / "excluded").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(excluded).to_parquet(out / "excluded" / "test-00000-of-00001.parquet")
    files["excluded/test-00000-of-00001.parquet"] = out / "excluded/test-00000-of-00001.parquet"
    reasons = Counter((e["reason"], e["subject"]) for e in excluded)
    configs = [
        {"config_name": c, "data_files": [{"split": "test", "path": p}]}
        for c, p in ((p.split("/")[0], p) for p in files)
    ]
    infos = [
        {
            "config_name": c,
            "features": datasets.Dataset.from_list(rows_[:1]).features._to_yaml_list(),
            "splits": [{"name": "test", "num_examples": len(rows_)}],
        }
        for c, rows_ in [*outputs.items(), ("excluded", excluded)]
    ]
    card = DatasetCardData(
        license="mit",
        pretty_name="MMLU (naive mmlu-na)",
        configs=configs,
        dataset_info=infos,
    ).to_yaml()
    body = "\n".join(
        [f"| {c} | {len(r)} |" for c, r in outputs.items()]
        + [f"| {reason} | {subject} | {n} |" for (reason, subject), n in sorted(reasons.items())]
        + [f"| {c} | {dict(n)} |" for c, n in letters.items()]
    )
    (out / "README.md").write_text(f"---\n{card}\n---\n{body}\n")
    hashes = {p: hashlib.sha256(f.read_bytes()).hexdigest() for p, f in files.items()}
    (out / "build.json").write_text(json.dumps({"seed": seed, "files": hashes}, indent=2))
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
