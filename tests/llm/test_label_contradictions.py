"""Labels that contradict themselves are invalid and re-asked; the run summary counts the
re-asked requests as retries (a scripted loopback server behind the real openai client)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from llm_testlib import Scripted, chat_body

from nabench.label.guideline import load_guideline
from nabench.label.labeler import label_items
from nabench.llm import OpenAIBackend, ResponseCache

ITEMS = pa.table({"id": ["a", "b", "c"], "question": ["qa", "qb", "qc"],
                  "choices": [["1", "2", "3", "4"]] * 3})  # fmt: skip
# per question: what the scripted model answers on attempts 1, 2, 3
SCRIPT = {
    "qa": [{"na_applicable": True, "rule": "subjective"},  # contradiction, then fine
           {"na_applicable": True, "rule": "none"}],
    "qb": [{"na_applicable": False, "rule": "none"}] * 3,  # contradicts itself every time
    "qc": [{"na_applicable": False, "rule": "approximate"}],
}  # fmt: skip


def test_contradicting_labels_are_invalid_and_retries_counted(
    scripted_server: Callable[..., Scripted], cache: ResponseCache
) -> None:
    seen: dict[str, int] = {}

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        q = body["messages"][-1]["content"].split("\n")[0].removeprefix("Question: ")
        k = seen.get(q, 0)
        seen[q] = k + 1
        answer = SCRIPT[q][min(k, len(SCRIPT[q]) - 1)]
        return 200, chat_body(json.dumps({**answer, "rationale": "r"}))

    srv = scripted_server(respond)
    backend = OpenAIBackend(model="scripted-model", base_url=srv.url, api_key="k",
                            json_mode="json_schema")  # fmt: skip
    run = label_items(ITEMS, backend, cache, load_guideline(), max_attempts=3, progress=False)
    rows = {r["id"]: r for r in run.table.to_pylist()}
    assert (rows["a"]["valid"], rows["a"]["na_applicable"], rows["a"]["attempts"]) == (
        True,
        True,
        2,
    )
    assert (rows["b"]["valid"], rows["b"]["na_applicable"], rows["b"]["attempts"]) == (
        False,
        None,
        3,
    )
    assert (rows["c"]["valid"], rows["c"]["rule"]) == (True, "approximate")
    # 3 first asks + a twice + ... : a re-asked once, b twice
    assert run.stats["calls"] == 6 == len(srv.posts)
    assert run.stats["retries"] == 3 and run.stats["invalid"] == 1


def test_guideline_contradiction_rule() -> None:
    g = load_guideline()
    assert g.contradiction({"na_applicable": True, "rule": "none"}) is None
    assert g.contradiction({"na_applicable": False, "rule": "subjective"}) is None
    assert "contradiction" in str(g.contradiction({"na_applicable": True, "rule": "approximate"}))
    assert "contradiction" in str(g.contradiction({"na_applicable": False, "rule": "none"}))
