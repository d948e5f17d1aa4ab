"""Requests, cache keys, the SQLite cache and the registry (no model needed)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nabench.core.errors import NabenchError
from nabench.llm import (
    BACKENDS,
    ChatRequest,
    Completion,
    ResponseCache,
    RunStats,
    TokenLogprob,
    cache_key,
    get_backend,
    write_stats,
)


def test_request_needs_exactly_one_of_messages_or_prompt() -> None:
    with pytest.raises(ValueError):
        ChatRequest(max_tokens=4)
    with pytest.raises(ValueError):
        ChatRequest(messages=(("user", "x"),), prompt="x", max_tokens=4)
    assert ChatRequest(prompt="x", max_tokens=4).prompt == "x"


def test_request_is_hashable_and_canonical() -> None:
    a = ChatRequest(
        messages=[["user", "hi"]],  # type: ignore[arg-type]
        max_tokens=5,
        json_schema='{"b": 1,  "a": {"y": 2, "x": 1}}',
        stop=["\n"],  # type: ignore[arg-type]
    )
    b = ChatRequest(
        messages=(("user", "hi"),),
        max_tokens=5,
        json_schema=json.dumps({"a": {"x": 1, "y": 2}, "b": 1}),
        stop=("\n",),
    )
    assert a == b and hash(a) == hash(b)
    assert a.canonical_json() == b.canonical_json()
    assert a.json_schema == '{"a":{"x":1,"y":2},"b":1}'
    assert {a, b} == {a}


@pytest.mark.parametrize(
    "change",
    [
        {"max_tokens": 6},
        {"temperature": 0.5},
        {"top_p": 0.9},
        {"stop": ("x",)},
        {"json_schema": "{}"},
        {"logprobs": 2},
        {"seed": 1},
        {"messages": (("user", "hi!"),)},
    ],
)
def test_cache_key_changes_with_every_field(change: dict[str, object]) -> None:
    import dataclasses

    base = ChatRequest(messages=(("user", "hi"),), max_tokens=5)
    other = dataclasses.replace(base, **change)  # type: ignore[arg-type]
    assert cache_key("m", base) != cache_key("m", other)


def test_cache_key_depends_on_model_and_namespace() -> None:
    r = ChatRequest(prompt="p", max_tokens=3)
    keys = {cache_key("m1", r), cache_key("m2", r), cache_key("m1", r, "guideline-v2")}
    assert len(keys) == 3
    assert cache_key("m1", r) == cache_key("m1", ChatRequest(prompt="p", max_tokens=3))


def test_cache_roundtrip_skips_errors_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    r1 = ChatRequest(prompt="a", max_tokens=3, logprobs=2)
    r2 = ChatRequest(prompt="b", max_tokens=3)
    lp = (TokenLogprob("x", -0.5, (("x", -0.5), ("y", -1.5))),)
    with ResponseCache(path) as c:
        k1, k2 = c.key("m", r1), c.key("m", r2)
        written = c.put_many(
            [
                (k1, "m", r1, Completion("hello", "stop", lp)),
                (k2, "m", r2, Completion(error="boom")),
            ]
        )
        assert written == 1
    with ResponseCache(path) as c:
        got = c.get_many([k1, k2, "missing"])
        assert set(got) == {k1}
        assert got[k1] == Completion("hello", "stop", lp, cached=True)
        assert len(c) == 1 and k1 in c and k2 not in c
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = [r[1] for r in con.execute("PRAGMA table_info(responses)")]
    assert cols == [
        "key", "model_id", "request_json", "text", "finish_reason", "logprobs_json", "created",
    ]  # fmt: skip
    assert (
        json.loads(con.execute("SELECT request_json FROM responses").fetchone()[0])["prompt"] == "a"
    )


def test_registry_unknown_backend_lists_known_names() -> None:
    assert {"local", "openai", "vllm"} <= set(BACKENDS)
    with pytest.raises(NabenchError, match="known backends: local, openai, vllm"):
        get_backend("no-such-backend")


def test_write_stats_is_atomic_json(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "stats.json"
    write_stats(RunStats(total=3, calls=1, cache_hits=2), out)
    data = json.loads(out.read_text())
    assert data["calls"] == 1 and data["cache_hits"] == 2
    assert {"calls", "cache_hits", "errors", "retries", "elapsed_s", "prompts_per_s"} <= set(data)
    assert [p.name for p in out.parent.iterdir()] == ["stats.json"]  # no temp file left
