"""`local` backend on the real SmolLM2-135M GGUF: mechanics only (the model answers at chance)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from llm_testlib import ANSWER_SCHEMA, SYSTEM, assert_seeded_samples_reproducible, mc_requests

from nabench.llm import ChatRequest, ResponseCache, complete_json, get_backend, run_cached

pytestmark = pytest.mark.slow


def test_batch_keeps_order_and_matches_single_calls(llama_cpp: Any) -> None:
    from nabench.llm import LocalBackend

    # cold contexts: every prompt is evaluated from scratch, so greedy outputs are exactly
    # reproducible and a batch (run in prefix order) must map each answer to its request
    cold = LocalBackend(n_ctx=1024, reuse_prefix=False)
    try:
        reqs = list(reversed(mc_requests(4, max_tokens=8)))
        batch = cold.complete(reqs)
        single = [cold.complete([r])[0] for r in reqs]
    finally:
        cold.close()
    assert all(c.error is None for c in batch)
    assert [c.text for c in batch] == [c.text for c in single]
    assert len({c.text for c in batch}) > 1  # distinct questions, not one repeated answer
    assert all(c.finish_reason in {"stop", "length"} for c in batch)


def test_warm_batch_reuses_prefix(local_backend: Any) -> None:
    reqs = mc_requests(4, max_tokens=4)
    out = local_backend.complete(reqs)
    assert all(c.error is None and c.text for c in out)
    # (warm prefix reuse evaluates the suffix in a different batch split than a cold run;
    #  llama.cpp numerics then differ slightly, so exact texts are not compared here)


def test_a_seeded_sample_does_not_depend_on_what_else_is_in_flight(local_backend: Any) -> None:
    """Same seed, same request, same text: alone, in a batch (run in prefix order, so right
    after requests sharing its prefix), and after a request on its own prompt; twice in a
    row. (A reused KV prefix can change llama.cpp's logits in the last bits, and a sample.)"""
    assert_seeded_samples_reproducible(local_backend)


def test_registry_builds_local_backend(llama_cpp: Any) -> None:
    backend = get_backend("local", n_ctx=512)
    try:
        assert backend.name == "local" and backend.model_id == "SmolLM2-135M-Instruct-Q4_1"
        assert backend.complete([ChatRequest(prompt="1, 2, 3,", max_tokens=4)])[0].error is None
    finally:
        backend.close()


def test_json_schema_mode_and_cache_rerun(local_backend: Any, cache: ResponseCache) -> None:
    n = 8
    reqs = mc_requests(n, max_tokens=24, json_schema=json.dumps(ANSWER_SCHEMA))
    comps, stats = run_cached(local_backend, reqs, cache, namespace="t", progress=False)
    assert stats.calls == n and stats.cache_hits == 0 and stats.errors == 0
    parsed = []
    for c in comps:
        try:
            parsed.append(json.loads(c.text))
        except json.JSONDecodeError:
            parsed.append(None)
    ok = [p for p in parsed if isinstance(p, dict) and p.get("answer") in {"A", "B", "C", "D"}]
    assert len(ok) >= n * 0.75, [c.text for c in comps]
    assert len(cache) == n

    comps2, stats2 = run_cached(local_backend, reqs, cache, namespace="t", progress=False)
    assert stats2.calls == 0 and stats2.cache_hits == n
    assert [c.text for c in comps2] == [c.text for c in comps]
    assert all(c.cached for c in comps2) and not any(c.cached for c in comps)

    # a fresh backend on a fully cached run never loads the weights
    from nabench.llm import LocalBackend

    fresh = LocalBackend(n_ctx=2048)
    try:
        assert fresh.model_id == local_backend.model_id and not fresh.loaded
        comps3, stats3 = run_cached(fresh, reqs, cache, namespace="t", progress=False)
        assert stats3.calls == 0 and [c.text for c in comps3] == [c.text for c in comps]
        assert not fresh.loaded
        fresh.complete(reqs[:1])  # a miss loads it
        assert fresh.loaded
    finally:
        fresh.close()
    assert not fresh.loaded

    # another namespace (e.g. guideline version) is a different cache entry
    _, stats4 = run_cached(local_backend, reqs[:2], cache, namespace="t2", progress=False)
    assert stats4.calls == 2


def test_complete_json_records_invalid_and_replays_attempts(
    local_backend: Any, cache: ResponseCache
) -> None:
    # max_tokens=3 cannot hold {"answer": "A"}: every attempt is truncated -> invalid
    short = mc_requests(2, max_tokens=3)
    good = mc_requests(3, max_tokens=24)
    reqs = short + good
    res, stats = complete_json(local_backend, cache, reqs, ANSWER_SCHEMA, max_attempts=3)
    assert len(res) == 5
    for r in res[:2]:
        assert not r.valid and r.value is None and r.attempts == 3 and r.error
        assert r.raw != "" or r.error  # raw text of the last attempt kept
    for r in res[2:]:
        if r.valid:
            assert r.value["answer"] in "ABCD" and json.loads(r.raw) == r.value
        else:
            assert r.value is None
    assert stats.extra["valid"] + stats.extra["invalid"] == 5
    assert stats.extra["invalid"] >= 2
    first_calls = stats.calls
    assert first_calls >= 5 + 2 * 2  # the two short ones were retried twice

    res2, stats2 = complete_json(local_backend, cache, reqs, ANSWER_SCHEMA, max_attempts=3)
    assert stats2.calls == 0 and stats2.cache_hits == first_calls
    assert res2 == res


def test_raw_prompt_with_logprobs(local_backend: Any, cache: ResponseCache) -> None:
    req = ChatRequest(prompt="The capital of France is", max_tokens=3, logprobs=3)
    (c,), _ = run_cached(local_backend, [req], cache, progress=False)
    assert c.error is None and c.logprobs is not None and len(c.logprobs) >= 1
    for t in c.logprobs:
        assert t.logprob <= 0 and 1 <= len(t.top) <= 3
        assert max(lp for _, lp in t.top) >= t.logprob - 1e-4
    (c2,), st = run_cached(local_backend, [req], cache, progress=False)
    assert st.calls == 0 and c2.logprobs == c.logprobs


def test_chat_logprobs(local_backend: Any) -> None:
    (c,) = local_backend.complete([ChatRequest.chat("Say hi", max_tokens=3, logprobs=2)])
    assert c.error is None and c.logprobs and all(len(t.top) <= 2 for t in c.logprobs)


def test_prompt_too_long_is_a_per_request_error(llama_cpp: Any) -> None:
    from nabench.llm import LocalBackend

    backend = LocalBackend(n_ctx=256)
    try:
        long = ChatRequest(prompt="word " * 600, max_tokens=4)
        ok = ChatRequest(prompt="1, 2, 3,", max_tokens=4)
        out = backend.complete([long, ok])
        assert out[0].error is not None and out[1].error is None
    finally:
        backend.close()


def test_loglik_scores_options(local_backend: Any) -> None:
    req = ChatRequest.chat(
        "What is 2 + 3?\nA. 4\nB. 5\nAnswer with one letter.", system=SYSTEM, max_tokens=1
    )
    scores = local_backend.loglik(req, ["A", "B", "C", "D"])
    assert len(scores) == 4 and all(s < 0 and math.isfinite(s) for s in scores)
    assert len(set(scores)) > 1
    # same call twice gives the same numbers (KV reuse does not leak between options)
    assert local_backend.loglik(req, ["A", "B", "C", "D"]) == pytest.approx(scores, abs=1e-4)
    # multi-token continuation = sum over its tokens, consistent with one-by-one scoring
    two = local_backend.loglik(req, ["B. 5"])[0]
    assert two < scores[1] + 1e-6
