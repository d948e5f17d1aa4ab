"""Benchmark: building every artifact prompt type for the full MMLU test split (5-shot from
dev), columnar vs a naive loop, measured in the same run.

* columnar: `nabench.perturb.artifacts` — option blocks rendered once per item, the few-shot
  prefix once per (prompt type, subject), prefix + test example joined in Arrow.
* naive: per item and per prompt type, rebuild the few-shot text from scratch with string
  concatenation, collect row dicts, then `pa.Table.from_pylist`.

Both produce the same prompts (checked). Times are the best of `--repeat` runs, as wall and
CPU (process) time — CPU time is the steadier number on a shared machine. `--full-build`
also times the whole `mmlu-artifacts` build (load, audit, build, validate, stage).

    python bench/artifacts_bench.py [--source ../shared/data/cais__mmlu] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.perturb.artifacts import PROMPT_TYPES, FewShotPlan, Items, plan_fewshot
from nabench.sources import get_source

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "cais__mmlu"
SEED = 20240601
LETTERS = "ABCD"


def columnar(test: pa.Table, pool: pa.Table) -> dict[str, pa.Table]:
    t, p = Items.from_table(test), Items.from_table(pool)
    plan = plan_fewshot(t, p, protocol="same_subject", k=5, seed=SEED, dataset="mmlu")
    return {name: pt.build(t, p, plan, SEED) for name, pt in PROMPT_TYPES.items()}


def _naive_example(kind: str, q: str, choices: list[str], answer: int, test: bool) -> str:
    text = ""
    if kind in ("full", "mem_no_choices", "mem_gold_choices", "mem_empty_choices"):
        text += "Question: " + q + "\n"
    if kind != "mem_no_choices":
        text += "Choices:\n"
        for i, c in enumerate(choices):
            if kind == "mem_gold_choices":
                c = choices[answer]
            elif kind == "mem_empty_choices":
                c = ""
            text += "(" + LETTERS[i] + ") " + c + "\n"
    if kind == "qi_step1":
        text += "Question:" if test else "Question: " + q + "\nAnswer: (" + LETTERS[answer] + ")"
        return text
    text += "Answer:" if test else "Answer: (" + LETTERS[answer] + ")"
    return text


def _naive_prior(q: str | None, text: str, gold: bool | None) -> str:
    out = "" if q is None else "Question: " + q + "\n"
    out += "Choice: " + text + "\n"
    out += "Answer:" if gold is None else "Answer: " + str(gold)
    return out


def naive(test: pa.Table, pool: pa.Table, plan: FewShotPlan) -> dict[str, pa.Table]:
    """Row by row: every prompt's few-shot text is rebuilt from the pool rows."""
    items = test.to_pylist()
    shots_rows = pool.to_pylist()
    out: dict[str, pa.Table] = {}
    groups = plan.group.tolist()
    for kind, pt in PROMPT_TYPES.items():
        rows: list[dict[str, Any]] = []
        for n, item in enumerate(items):
            g = groups[n]
            q = item["question"].strip()
            choices = [c.strip() for c in item["choices"]]
            if pt.per_choice:
                with_q = kind.endswith("with_question")
                for c in range(len(choices)):
                    prompt = ""
                    ids = []
                    for j, ci, gold in plan.prior[g]:
                        s = shots_rows[j]
                        sq = s["question"].strip() if with_q else None
                        prompt += _naive_prior(sq, s["choices"][ci].strip(), gold) + "\n\n"
                        ids.append(f"{s['id']}#{ci}")
                    prompt += _naive_prior(q if with_q else None, choices[c], None)
                    rows.append(
                        {
                            "id": f"{item['id']}#{c}",
                            "prompt": prompt,
                            "target": str(c == item["answer"]),
                            "stop": pt.stop,
                            "fewshot_ids": ids,
                        }
                    )
                continue
            prompt = ""
            ids = []
            for j in plan.rows[g]:
                s = shots_rows[j]
                sc = [c.strip() for c in s["choices"]]
                prompt += _naive_example(kind, s["question"].strip(), sc, s["answer"], False)
                prompt += "\n\n"
                ids.append(s["id"])
            prompt += _naive_example(kind, q, choices, item["answer"], True)
            target = None if kind == "qi_step1" else LETTERS[item["answer"]]
            rows.append(
                {
                    "id": item["id"],
                    "prompt": prompt,
                    "target": target,
                    "stop": pt.stop,
                    "fewshot_ids": ids,
                }
            )
        out[kind] = pa.Table.from_pylist(rows)
    return out


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full-build", action="store_true")
    args = parser.parse_args()

    mmlu = get_source("mmlu")
    test = mmlu.load("test", location=str(args.source), config="all", seed=SEED).items
    pool = mmlu.load("dev", location=str(args.source), config="all", seed=SEED).items
    plan = plan_fewshot(
        Items.from_table(test),
        Items.from_table(pool),
        protocol="same_subject",
        k=5,
        seed=SEED,
        dataset="mmlu",
    )
    fast_wall, fast_cpu, fast = timed(lambda: columnar(test, pool), args.repeat)
    slow_wall, slow_cpu, slow = timed(lambda: naive(test, pool, plan), args.repeat)
    for name in PROMPT_TYPES:
        assert fast[name].column("prompt").to_pylist() == slow[name].column("prompt").to_pylist()
        assert fast[name].column("id").to_pylist() == slow[name].column("id").to_pylist()
    rows = sum(t.num_rows for t in fast.values())
    mb = sum(t.column("prompt").nbytes for t in fast.values()) / 1e6
    print(
        f"MMLU test: {test.num_rows} items, {len(PROMPT_TYPES)} prompt types, {rows} rows, "
        f"{mb:.0f} MB of prompt text (identical in both)"
    )
    print(f"columnar : wall {fast_wall:6.2f} s   cpu {fast_cpu:6.2f} s")
    print(f"naive    : wall {slow_wall:6.2f} s   cpu {slow_cpu:6.2f} s")
    print(f"ratio    : wall {slow_wall / fast_wall:5.1f}x   cpu {slow_cpu / fast_cpu:5.1f}x")

    if args.full_build:
        from nabench.pipelines.artifacts import build_artifacts
        from nabench.pipelines.registry import load_recipe
        from nabench.pipelines.skeleton import BuildOptions

        with tempfile.TemporaryDirectory() as tmp:
            opts = BuildOptions(source=str(args.source), out=Path(tmp) / "b", progress=False)
            wall, cpu, _ = timed(lambda: build_artifacts(load_recipe("mmlu-artifacts"), opts), 1)
        print(
            f"full mmlu-artifacts build (load+audit+build+validate+stage): "
            f"wall {wall:.1f} s, cpu {cpu:.1f} s"
        )


if __name__ == "__main__":
    main()
