"""`openai` backend against a real llama-cpp-python server on 127.0.0.1 (SmolLM2)."""

from __future__ import annotations

import json
import urllib.request

import pytest
from llm_testlib import ANSWER_SCHEMA, mc_requests

from nabench.llm import OpenAIBackend, ResponseCache, complete_json, run_cached

pytestmark = pytest.mark.slow


def _answer(text: str) -> str | None:
    """The answer letter if `text` is JSON valid under ANSWER_SCHEMA, else None."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    ok = isinstance(value, dict) and value.get("answer") in {"A", "B", "C", "D"}
    return value["answer"] if ok else None


def test_server_lists_the_model(llama_server: str) -> None:
    with urllib.request.urlopen(f"{llama_server}/models", timeout=10) as r:
        data = json.load(r)
    assert data["data"][0]["id"] == "SmolLM2-135M-Instruct-Q4_1"


def test_batch_json_and_cache(llama_server: str, cache: ResponseCache) -> None:
    backend = OpenAIBackend(base_url=llama_server, concurrency=4)  # model from /v1/models
    assert backend.model_id == "SmolLM2-135M-Instruct-Q4_1"
    n = 6
    reqs = mc_requests(n, max_tokens=24, json_schema=json.dumps(ANSWER_SCHEMA))
    comps, stats = run_cached(backend, reqs, cache, progress=False)
    assert stats.calls == n and stats.errors == 0, [c.error for c in comps]
    assert backend.json_mode == "json_object"  # llama-cpp-python reports owned_by "me"
    valid = sum(_answer(c.text) is not None for c in comps)
    assert valid >= n * 0.75, [c.text for c in comps]
    comps2, stats2 = run_cached(backend, reqs, cache, progress=False)
    assert stats2.calls == 0 and stats2.cache_hits == n
    assert [c.text for c in comps2] == [c.text for c in comps]


def test_concurrent_requests_and_complete_json(llama_server: str, cache: ResponseCache) -> None:
    backend = OpenAIBackend(base_url=llama_server, concurrency=3)
    reqs = mc_requests(5, max_tokens=24)
    res, stats = complete_json(backend, cache, reqs, ANSWER_SCHEMA, max_attempts=2)
    assert len(res) == 5 and stats.errors == 0
    assert all((r.value is not None) == r.valid for r in res)
    assert stats.extra["valid"] >= 3
    res2, stats2 = complete_json(backend, cache, reqs, ANSWER_SCHEMA, max_attempts=2)
    assert stats2.calls == 0 and res2 == res


def test_raw_completion_with_logprobs(llama_server: str) -> None:
    from nabench.llm import ChatRequest

    backend = OpenAIBackend(base_url=llama_server)
    (c,) = backend.complete([ChatRequest(prompt="1, 2, 3,", max_tokens=3, logprobs=2)])
    assert c.error is None and c.text
    assert c.logprobs is not None and all(t.logprob <= 0 for t in c.logprobs)
