"""`openai` backend mechanics against a scripted loopback HTTP server: the client's own retries,
bounded concurrency, JSON-mode fallback, key hygiene. The real openai client is used."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from llm_testlib import ANSWER_SCHEMA, Scripted, chat_body

from nabench.llm import ChatRequest, OpenAIBackend, ResponseCache, free_port, run_cached

SECRET = "sk-test-secret-do-not-print"


def _backend(url: str, **kw: Any) -> OpenAIBackend:
    return OpenAIBackend(model="scripted-model", base_url=url, api_key=SECRET, **kw)


def test_retries_503_then_200_are_counted(
    scripted_server: Callable[..., Scripted], cache: ResponseCache
) -> None:
    failures = 3

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        if n < failures:
            return 503, {"error": {"message": "overloaded"}}
        return 200, chat_body("ok")

    srv = scripted_server(respond)
    backend = _backend(srv.url, concurrency=1, max_retries=5)
    comps, stats = run_cached(backend, [ChatRequest.chat("q", max_tokens=4)], cache, progress=False)
    assert comps[0].error is None and comps[0].text == "ok"
    assert stats.retries == failures and stats.calls == 1 and stats.errors == 0
    assert len(srv.posts) == failures + 1


def test_429_retried_but_400_is_not(scripted_server: Callable[..., Scripted]) -> None:
    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        text = body["messages"][-1]["content"]
        if text == "bad":
            return 400, {"error": {"message": "bad request"}}
        return (429, {"error": {"message": "slow down"}}) if n < 2 else (200, chat_body("ok"))

    srv = scripted_server(respond)
    backend = _backend(srv.url, concurrency=1, max_retries=4)
    out = backend.complete([ChatRequest.chat("bad", max_tokens=4)])
    assert out[0].error is not None and "400" in out[0].error
    assert backend.counters.retries == 0
    out = backend.complete([ChatRequest.chat("good", max_tokens=4)])
    assert out[0].text == "ok" and backend.counters.retries >= 1


def test_connection_refused_becomes_error_after_max_retries(cache: ResponseCache) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backend = _backend(url, max_retries=2)
    reqs = [ChatRequest.chat(f"q{i}", max_tokens=4) for i in range(3)]
    comps, stats = run_cached(backend, reqs, cache, progress=False)
    assert all(c.error and "APIConnectionError" in c.error for c in comps)
    assert stats.errors == 3 and stats.retries == 3 * 2
    assert len(cache) == 0  # errors are not cached
    assert all(SECRET not in (c.error or "") for c in comps)
    assert SECRET not in repr(backend)
    # a rerun tries again (nothing was cached)
    _, stats2 = run_cached(backend, reqs, cache, progress=False)
    assert stats2.calls == 3 and stats2.cache_hits == 0


def test_concurrency_is_bounded_and_used(scripted_server: Callable[..., Scripted]) -> None:
    srv = scripted_server(
        lambda p, b, n: (200, chat_body(b["messages"][-1]["content"].upper())), delay_s=0.2
    )
    backend = _backend(srv.url, concurrency=4)
    reqs = [ChatRequest.chat(f"q{i}", max_tokens=4) for i in range(12)]
    out = backend.complete(reqs)
    assert [c.text for c in out] == [f"Q{i}" for i in range(12)]  # order kept
    assert 1 < srv.max_inflight <= 4


def test_auto_json_mode_falls_back_to_json_object_on_400(
    scripted_server: Callable[..., Scripted],
) -> None:
    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        if body.get("response_format", {}).get("type") == "json_schema":
            return 400, {"error": {"message": "unknown response_format"}}
        return 200, chat_body('{"answer": "B"}')

    srv = scripted_server(respond)
    backend = _backend(srv.url, concurrency=1)
    req = ChatRequest.chat("q", max_tokens=16, json_schema=json.dumps(ANSWER_SCHEMA))
    out = backend.complete([req, req])
    assert [c.text for c in out] == ['{"answer": "B"}'] * 2
    kinds = [p["response_format"]["type"] for p in srv.posts]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert srv.posts[-1]["response_format"]["schema"] == ANSWER_SCHEMA
    assert backend.json_mode == "json_object"


def test_auto_json_mode_reads_owned_by(scripted_server: Callable[..., Scripted]) -> None:
    srv = scripted_server(lambda p, b, n: (200, chat_body("{}")), owned_by="vllm")
    backend = _backend(srv.url)
    backend.complete([ChatRequest.chat("q", max_tokens=8, json_schema="{}")])
    rf = srv.posts[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == {}

    srv2 = scripted_server(lambda p, b, n: (200, chat_body("{}")), owned_by="me")
    backend2 = _backend(srv2.url)
    backend2.complete([ChatRequest.chat("q", max_tokens=8, json_schema="{}")])
    assert srv2.posts[0]["response_format"] == {"type": "json_object", "schema": {}}


def test_json_batches_each_keep_their_schema_and_positions(
    scripted_server: Callable[..., Scripted], cache: ResponseCache
) -> None:
    """Two schemas in one run: results land at their members' positions, stats are summed,
    and an answer invalid under its batch's schema is retried then reported invalid."""
    from nabench.llm import JsonBatch, complete_json_batches

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("num"):
            return 200, chat_body(json.dumps({"n": int(prompt.split()[1])}))
        return 200, chat_body(json.dumps({"word": "x"}) if "bad" not in prompt else "nope")

    srv = scripted_server(respond)
    number = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    word = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    batches = [
        JsonBatch([0, 3], [ChatRequest.chat("num 0"), ChatRequest.chat("num 3")], number),
        JsonBatch([1, 2], [ChatRequest.chat("word"), ChatRequest.chat("bad word")], word),
    ]
    results, stats = complete_json_batches(
        _backend(srv.url), cache, batches, total=4, max_attempts=2, namespace="t"
    )
    assert sorted(results) == [0, 1, 2, 3]
    assert results[0].value == {"n": 0} and results[3].value == {"n": 3}
    assert results[1].value == {"word": "x"}
    assert not results[2].valid and results[2].attempts == 2 and results[2].raw == "nope"
    assert stats.total == 4 and stats.extra == {"valid": 3, "invalid": 1}
    assert stats.calls == 5  # 4 first attempts + 1 retry of the invalid one


def test_one_client_for_the_backend_and_close(scripted_server: Callable[..., Scripted]) -> None:
    srv = scripted_server(lambda p, b, n: (200, chat_body("ok")))
    with _backend(srv.url, concurrency=2) as backend:
        client = backend._client
        for _ in range(3):
            assert [c.text for c in backend.complete([ChatRequest.chat("q")] * 3)] == ["ok"] * 3
        assert backend._client is client  # not one client per complete()
    assert client.is_closed()


def _completion_body(text: str) -> dict[str, Any]:
    choice = {"text": text, "index": 0, "finish_reason": "length", "logprobs": None}
    return {"id": "cmpl-1", "object": "text_completion", "created": 0, "model": "m",
            "choices": [choice]}  # fmt: skip


def test_min_tokens_goes_in_the_body_beside_structured_outputs(
    scripted_server: Callable[..., Scripted],
) -> None:
    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        chat = path.endswith("/chat/completions")
        return 200, (chat_body("A") if chat else _completion_body("A"))

    srv = scripted_server(respond)
    backend = _backend(srv.url, concurrency=1, json_mode="json_object")
    schema = json.dumps(ANSWER_SCHEMA)
    out = backend.complete(
        [
            ChatRequest(prompt="Q\nAnswer:", max_tokens=1, logprobs=5, min_tokens=1),
            ChatRequest(prompt="Q\nAnswer:", max_tokens=1, logprobs=5),
            ChatRequest(prompt="Q", max_tokens=8, min_tokens=1, json_schema=schema),
            ChatRequest.chat("q", max_tokens=4, min_tokens=1),
        ]
    )
    assert [c.error for c in out] == [None] * 4
    with_min, plain, structured, chat = srv.posts
    assert with_min["min_tokens"] == 1 and "min_tokens" not in plain
    assert structured["min_tokens"] == 1
    assert structured["structured_outputs"] == {"json": ANSWER_SCHEMA}
    assert chat["min_tokens"] == 1 and "messages" in chat


def test_progress_advances_per_finished_request_within_a_chunk(
    scripted_server: Callable[..., Scripted], cache: ResponseCache
) -> None:
    """One chunk of 6 requests, sent one at a time: while request i is being answered the
    bar already shows the i requests before it (before, it moved once, per chunk)."""
    seen: list[int] = []

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        hook = backend.on_request_done
        assert hook is not None
        seen.append(hook.__self__.shown)  # type: ignore[attr-defined]
        return 200, chat_body("ok")

    srv = scripted_server(respond)
    backend = _backend(srv.url, concurrency=1)
    reqs = [ChatRequest.chat(f"q{i}", max_tokens=4) for i in range(6)]
    comps, _ = run_cached(backend, reqs, cache, chunk_size=6, progress=False)
    assert all(c.text == "ok" for c in comps)
    assert seen == [0, 1, 2, 3, 4, 5]
    assert backend.on_request_done is None  # only while run_cached runs
