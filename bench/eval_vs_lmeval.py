"""Peer cross-check and speed ratio: `nabench eval --prompt-format lm-eval` vs lm-eval.

The same model and the same engine for both, on the same items of ``original`` and
``na_keyed`` of a fresh ``mmlu-na`` build (first N items of each config):

* **llama.cpp server** (`nabench llm serve-local`, SmolLM2 GGUF): lm-eval's ``gguf``
  model (one echo + logprobs completion request per option) vs nabench's ``openai``
  backend on the completions endpoint (one request per item: the next token's top-k
  log-probabilities, the option letters read from it);
* **HF transformers** (``--hf``): lm-eval's ``hf`` model on the SmolLM2 HF folder vs
  nabench's ``vllm`` backend (vLLM for CPU) on the same folder.

Both sides run as their own CLI (``lm-eval run`` / ``nabench eval``) in a subprocess, one
after the other, and are timed wall-clock including start-up; nabench starts from an empty
response cache. lm-eval's per-item predictions are read back with nabench's own reader
(:mod:`nabench.evaluation.external`). Printed per config: items, per-item agreement of the
predicted option, both accuracies and the difference in correct items; then both
throughputs and their ratio.

Run: ``python bench/eval_vs_lmeval.py [--n 200] [--gguf-n 40] [--hf [--hf-n 50]]``.
lm-eval's gguf path costs ~7 s per item on two cores, so ``--gguf-n`` (default 40) bounds
it; the count used is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source tree

from nabench.evaluation.external import read_lm_eval
from nabench.llm import default_hf_dir, local_server

ROOT = Path(__file__).resolve().parents[1]
MMLU = ROOT.parent / "shared" / "data" / "cais__mmlu"
CONFIGS = ("original", "na_keyed")
MODEL_ID = "SmolLM2-135M-Instruct-Q4_1"


def run(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Run a CLI; its wall-clock seconds. Fails loudly with the output tail."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(
            f"failed ({proc.returncode}): {' '.join(cmd[:6])} ...\n{proc.stdout[-2000:]}"
            f"\n{proc.stderr[-3000:]}"
        )
    return dt


def build(out: Path, n: int) -> Path:
    # --limit counts source items; a few are excluded, so take some slack.
    run(
        [
            sys.executable,
            "-m",
            "nabench.cli",
            "build",
            "mmlu-na",
            "--source",
            str(MMLU),
            "--labels",
            "none",
            "--limit",
            str(n + n // 5 + 10),
            "--out",
            str(out),
        ]
    )
    return out


def nabench_eval(build_dir: Path, out: Path, n: int, backend_args: list[str]) -> tuple[float, dict]:
    cmd = [
        sys.executable,
        "-m",
        "nabench.cli",
        "eval",
        str(build_dir),
        *[arg for c in CONFIGS for arg in ("--config", c)],
        "--prompt-format",
        "lm-eval",
        "--limit",
        str(n),
        "--out",
        str(out),
        "--cache",
        str(out / "cache.sqlite"),
        "--quiet",
        *backend_args,
    ]
    dt = run(cmd)
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return dt, {c: pd.read_parquet(runs[0] / f"{c}.parquet") for c in CONFIGS}


def lm_eval(build_dir: Path, out: Path, n: int, model: str, model_args: str) -> tuple[float, dict]:
    group = "nabench_mmlu_na"
    tasks = ",".join(f"{group}_{c}" for c in CONFIGS)
    cmd = [
        "lm-eval",
        "run",
        "--include_path",
        str(build_dir / "lm_eval"),
        "--tasks",
        tasks,
        "--model",
        model,
        "--model_args",
        model_args,
        "--limit",
        str(n),
        "--log_samples",
        "--output_path",
        str(out),
    ]
    dt = run(cmd, env={"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    return dt, {r.config: r.responses for r in read_lm_eval(out)}


def compare(label: str, n: int, nb: tuple[float, dict], lm: tuple[float, dict]) -> float:
    print(f"\n== {label}: {n} items per config ==")
    print(
        f"{'config':<10} {'items':>5} {'agree':>7} {'acc nabench':>11} {'acc lm-eval':>11} "
        f"{'Δcorrect':>8}"
    )
    for c in CONFIGS:
        a, b = nb[1][c], lm[1][c]
        m = a.merge(b, on="id", suffixes=("_nb", "_lm"))
        if len(m) != len(a) or len(m) != len(b):
            sys.exit(f"{c}: item sets differ ({len(a)} nabench, {len(b)} lm-eval, {len(m)} shared)")
        agree = float((m["parsed_nb"] == m["parsed_lm"]).mean())
        zero = int(b["raw_output"].map(lambda r: set(json.loads(r)) == {0.0}).sum())
        if zero:
            print(
                f"  note: {zero} of {len(b)} lm-eval items have every option's log-likelihood "
                "exactly 0 (no scored continuation tokens came back)"
            )
        d = int(m["correct_nb"].sum()) - int(m["correct_lm"].sum())
        print(
            f"{c:<10} {len(m):>5} {agree:>7.1%} {m['correct_nb'].mean():>11.3f} "
            f"{m['correct_lm'].mean():>11.3f} {d:>+8d}"
        )
        # the option scores themselves, not just the argmax: per item, each side's
        # log-probabilities softmaxed over the options, their largest gap, and whether the
        # whole ranking of the options agrees
        if "option_logprobs" in m.columns:
            gaps, ranks, diffs = [], [], []
            for lp_nb, raw_lm in zip(m["option_logprobs"], m["raw_output_lm"], strict=True):
                a, b = np.asarray(lp_nb, float), np.asarray(json.loads(raw_lm), float)
                if len(a) != len(b):
                    continue
                seen = np.isfinite(a)  # the options in nabench's top-k: log p(" X" | prompt)
                diffs += np.abs(a[seen] - b[seen]).tolist()
                if not seen.all():
                    continue  # an option outside nabench's top-k: no full comparison
                pa_, pb_ = np.exp(a - a.max()), np.exp(b - b.max())
                pa_, pb_ = pa_ / pa_.sum(), pb_ / pb_.sum()
                gaps.append(float(np.abs(pa_ - pb_).max()))
                ranks.append(bool((np.argsort(-a) == np.argsort(-b)).all()))
            if diffs:
                print(
                    f"  log-probability of {len(diffs)} options nabench read from its top-k vs "
                    f"lm-eval's log-likelihood: max |diff| {max(diffs):.2e}, median "
                    f"{np.median(diffs):.2e}"
                )
            if gaps:
                print(
                    f"  option probabilities on {len(gaps)} items: largest gap median "
                    f"{np.median(gaps):.4f}, max {max(gaps):.4f}; full option ranking agrees "
                    f"on {np.mean(ranks):.1%}"
                )
        # agreement means little if both always pick one letter: show what they picked
        for side in ("nb", "lm"):
            counts = m[f"parsed_{side}"].fillna("-").value_counts().sort_index()
            print(
                f"  predicted letters ({side}): " + " ".join(f"{k}={v}" for k, v in counts.items())
            )
    items = n * len(CONFIGS)
    r_nb, r_lm = items / nb[0], items / lm[0]
    print(
        f"throughput: nabench {r_nb:.2f} items/s ({nb[0]:.1f} s), lm-eval {r_lm:.3f} items/s "
        f"({lm[0]:.1f} s) -> nabench {r_nb / r_lm:.1f}x"
    )
    return r_nb / r_lm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="items per config (nabench side cap)")
    ap.add_argument(
        "--gguf-n", type=int, default=40, help="items per config on the gguf path (0: skip it)"
    )
    ap.add_argument("--hf", action="store_true", help="also the transformers / vLLM path")
    ap.add_argument("--hf-n", type=int, default=50, help="items per config on the hf path")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nabench-vs-lmeval-") as tmp:
        t = Path(tmp)
        b = build(t / "mmlu-na", max(args.n, args.hf_n if args.hf else 0))
        n = min(args.n, args.gguf_n)
        if n > 0:  # --gguf-n 0: only the HF path
            print(
                f"llama.cpp server path: {n} items per config (of --n {args.n}; lm-eval's gguf "
                "model makes one request per option)"
            )
            with local_server() as url:
                root = url.removesuffix("/v1")
                args_nb = ["--backend", "openai", "--base-url", url, "--model", MODEL_ID]
                nb = nabench_eval(b, t / "nb-gguf", n, args_nb)
                lm = lm_eval(b, t / "lm-gguf", n, "gguf", f"base_url={root}")
            compare("llama.cpp server (lm-eval gguf vs nabench openai)", n, nb, lm)
        if args.hf:
            hf = default_hf_dir()
            n = min(args.n, args.hf_n)
            nb = nabench_eval(b, t / "nb-hf", n, ["--backend", "vllm", "--model", str(hf)])
            lm = lm_eval(b, t / "lm-hf", n, "hf", f"pretrained={hf},dtype=float32")
            compare("HF folder (lm-eval hf vs nabench vLLM-CPU)", n, nb, lm)


if __name__ == "__main__":
    main()
