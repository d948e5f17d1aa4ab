"""Labeling throughput on the local SmolLM2-135M model (llama-cpp-python, 2 CPU cores).

Prompts: real MMLU test questions (read from ../shared/data, never copied) behind a long
shared instruction prefix (the NA-applicability guideline if `nabench/guidelines/
na_applicability.*` exists, else a placeholder of realistic length, ~600 tokens).

Measured:
  cold      each prompt evaluated from scratch (context reset before every request)
  warm-seq  prompts sharing the prefix back to back, one request per call
  batched   the same prompts as one `complete` batch (prefix-ordered)
  interleaved  two different guideline prefixes alternating: input order vs prefix order
  cache     a cache-hit re-run through `run_cached`
  server    (--server) the `openai` backend against `serve-local`, concurrency 1 vs 4

Recorded 2026-11-29 (2 shared CPU cores, AVX2, load average 3.9-4.6 from other jobs;
llama-cpp-python 0.3.36, SmolLM2-135M Q4_1, 859-token prefix, max_tokens=2):
  cold 0.04 prompts/s | warm sequential 0.39 | batched (run_cached) 0.44
  prefix reuse 9.7x cold | batched/sequential 1.12 | interleaved prefixes: prefix order
  2.9x input order | cache-hit re-run 6,263 items/s | batched texts == sequential: 120/120
Absolute rates are low because the machine was oversubscribed; the ratios are the point.

Usage: python bench/label_bench.py [-n 120] [--cold 8] [--max-tokens 2] [--server] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from nabench.llm import (
    ChatRequest,
    Completion,
    LocalBackend,
    OpenAIBackend,
    ResponseCache,
    local_server,
    run_cached,
    write_json_atomic,
)

ROOT = Path(__file__).resolve().parents[1]
MMLU = ROOT.parent / "shared" / "data" / "cais__mmlu" / "all" / "test-00000-of-00001.parquet"
LETTERS = "ABCD"

PLACEHOLDER_GUIDELINE = """\
You are labeling multiple-choice questions for a benchmark that tests whether models can
recognise when none of the listed options is correct. For each question you decide whether
the question is "NA-applicable": whether replacing the correct option with "None of the
above" would still give a well-posed question with exactly one defensible answer.

Definitions.
1. A question is NA-applicable when its correct answer is a specific fact, value, name,
   date, formula, or statement that can be checked on its own, so that once it is removed
   from the options none of the remaining options is correct.
2. A question is NOT NA-applicable when the options are graded ("most likely", "best",
   "primary", "most appropriate") so that removing the best option makes the next-best
   option correct; when the options are ranges or bins that cover all possibilities; when
   the options are of the form "both A and B", "all of the above", "none of the above" or
   "neither"; when the stem asks which option is NOT or EXCEPT true; or when the question
   refers to the position or the wording of the options themselves.
3. Questions asking for a comparison ("which is larger") are NA-applicable only when the
   compared quantities are stated and exactly one option states the correct relation.
4. Questions with numeric answers are NA-applicable when the computation has one exact
   result; they are not when the options are approximations of which the nearest one is
   meant to be chosen.
5. Questions about definitions are NA-applicable when the definition is standard; if the
   field uses several competing definitions and the options mix them, they are not.
6. Questions about law, ethics or policy are NA-applicable only when they ask what a named
   rule, statute, or source says, not what is fair, reasonable, or advisable.
7. True/false pairs ("Statement 1 | Statement 2") are NA-applicable: each combination is a
   specific claim.

Procedure.
- Read the question and all options before deciding. Do not answer the question itself.
- Identify the kind of question (factual, graded, numeric, definitional, normative, pair).
- Apply the definitions above in order; the first rule that matches decides.
- If the stem or the options are ambiguous, incomplete, or depend on a missing figure,
  passage or table, label the question as not applicable and say so in the reason.
- Never use outside knowledge about which option is the gold answer to decide.
- Be consistent: two questions of the same kind get the same label.

Output format.
Return only a JSON object with two fields: "applicable", a boolean, and "reason", one short
sentence naming the rule that decided. Do not add any other text, explanation, markdown or
code fences. Keep the reason under twenty words. If in doubt, prefer false: a question that
is wrongly kept harms the benchmark more than a question that is wrongly dropped.

Examples of reasons: "rule 1: a specific date is asked"; "rule 2: graded, asks for the best
option"; "rule 2: options are ranges"; "rule 4: exact computation"; "rule 6: asks what is
reasonable"; "rule 7: true/false pair"; "ambiguous: refers to a missing figure".
"""

SCHEMA = {
    "type": "object",
    "properties": {"applicable": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["applicable", "reason"],
}


def load_guideline() -> str:
    for path in sorted((ROOT / "nabench" / "guidelines").glob("na_applicability.*")):
        if path.suffix in {".md", ".txt", ".jinja", ".yaml", ".yml"}:
            return path.read_text(encoding="utf-8")
    return PLACEHOLDER_GUIDELINE


def load_questions(n: int) -> list[dict[str, Any]]:
    table = pq.read_table(MMLU, columns=["question", "subject", "choices"])
    step = max(1, table.num_rows // n)  # spread over subjects, deterministic
    rows = table.take(list(range(0, step * n, step))).to_pylist()
    return rows[:n]


def build_requests(rows: Sequence[dict[str, Any]], guideline: str, **kw: Any) -> list[ChatRequest]:
    reqs = []
    for row in rows:
        opts = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(row["choices"]))
        user = f"Subject: {row['subject']}\nQuestion: {row['question']}\n{opts}\nLabel it."
        reqs.append(ChatRequest.chat(user, system=guideline, **kw))
    return reqs


def timed(label: str, fn: Callable[[], list[Completion]], n: int) -> tuple[float, list[Completion]]:
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    assert len(out) == n and all(c.error is None for c in out), [c.error for c in out][:3]
    print(f"  {label:28s} {n:4d} prompts {dt:7.1f} s {n / dt:8.2f} prompts/s", flush=True)
    return n / dt, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=120, help="prompts for the warm/batched/cache runs")
    ap.add_argument("--cold", type=int, default=8, help="prompts for the cold/interleaved runs")
    ap.add_argument("--max-tokens", type=int, default=2)
    ap.add_argument("--server", action="store_true", help="also bench the openai backend")
    ap.add_argument("--json", type=Path, default=ROOT / ".cache" / "bench" / "label_bench.json")
    args = ap.parse_args()

    guideline = load_guideline()
    rows = load_questions(args.n)
    reqs = build_requests(rows, guideline, max_tokens=args.max_tokens)
    res: dict[str, Any] = {
        "n": args.n,
        "n_cold": args.cold,
        "max_tokens": args.max_tokens,
        "machine": f"{platform.machine()} x{os.cpu_count()}",
        "loadavg_start": os.getloadavg()[0],
    }

    warm = LocalBackend(n_ctx=2048)
    prefix_tokens = len(warm.tokenize(guideline))
    res["prefix_tokens"] = prefix_tokens
    print(f"guideline prefix: {prefix_tokens} tokens; {args.n} MMLU prompts")
    warm.complete(reqs[:1])  # load + warm up

    cold = LocalBackend(n_ctx=2048, reuse_prefix=False)
    sub = reqs[: args.cold]
    res["cold_pps"], _ = timed("cold", lambda: [cold.complete([r])[0] for r in sub], len(sub))
    cold.close()
    res["warm_seq_pps"], seq = timed(
        "warm sequential", lambda: [warm.complete([r])[0] for r in reqs], len(reqs)
    )
    # the production path: run_cached (prefix-ordered chunks, commit per chunk) into a fresh
    # cache; then the cache-hit re-runs
    with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "c.sqlite") as cache:
        res["batched_pps"], bat = timed(
            "batched (run_cached)",
            lambda: run_cached(warm, reqs, cache, namespace="bench", progress=False)[0],
            len(reqs),
        )
        _, st2 = run_cached(warm, reqs, cache, namespace="bench", progress=False)
        assert st2.calls == 0 and st2.cache_hits == len(reqs)
        _, st3 = run_cached(warm, reqs, cache, namespace="bench", progress=False)
        res["cache_hit_items_per_s"] = min(st2.prompts_per_s, st3.prompts_per_s)
        print(
            f"  cache-hit re-run            {res['cache_hit_items_per_s']:.0f} items/s", flush=True
        )
    res["batched_same_text"] = sum(a.text == b.text for a, b in zip(seq, bat, strict=True))

    # two different prefixes interleaved: input order thrashes the KV cache, prefix order
    # (what `complete` and `run_cached` do) reuses it
    other = "Guideline revision B. " + guideline
    mixed = [
        r if i % 2 == 0 else build_requests([rows[i]], other, max_tokens=args.max_tokens)[0]
        for i, r in enumerate(sub)
    ]
    res["interleaved_input_order_pps"], _ = timed(
        "interleaved, input order", lambda: [warm.complete([r])[0] for r in mixed], len(mixed)
    )
    res["interleaved_prefix_order_pps"], _ = timed(
        "interleaved, prefix order", lambda: warm.complete(mixed), len(mixed)
    )

    if args.server:
        srv_reqs = reqs[: max(args.cold, 16)]
        with local_server() as url:
            for conc in (1, 4):
                be = OpenAIBackend(base_url=url, concurrency=conc)
                be.complete(srv_reqs[:1])
                res[f"server_c{conc}_pps"], _ = timed(
                    f"server concurrency {conc}", lambda be=be: be.complete(srv_reqs), len(srv_reqs)
                )
    warm.close()

    res["loadavg_end"] = os.getloadavg()[0]
    res["prefix_reuse_ratio"] = res["warm_seq_pps"] / res["cold_pps"]
    res["batched_vs_sequential"] = res["batched_pps"] / res["warm_seq_pps"]
    res["interleaved_ordering_gain"] = (
        res["interleaved_prefix_order_pps"] / res["interleaved_input_order_pps"]
    )
    print(f"{'metric':34s} value")
    for k, v in res.items():
        print(f"{k:34s} {v:.2f}" if isinstance(v, float) else f"{k:34s} {v}")
    targets = {
        "prefix reuse >= 4x cold": res["prefix_reuse_ratio"] >= 4,
        "cache-hit re-run >= 1000 items/s": res["cache_hit_items_per_s"] >= 1000,
        "batched >= sequential (5% noise)": res["batched_vs_sequential"] >= 0.95,
    }
    for name, ok in targets.items():
        print(f"[{'ok' if ok else 'MISS'}] {name}")
    res["targets"] = targets
    write_json_atomic(res, args.json)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
