"""A scripted self-knowledge model for tests of the pipeline's own logic (refill, quotas,
validation, caching): answers chosen per prompt, served by the scripted OpenAI-compatible
server and read through nabench's real `openai` backend. The real SmolLM2 keeps its own
end-to-end tests (test_selfknow_pipeline.py, test_refill.py)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from fixtures.scripted import chat_body

# The slot line of a single generation prompt (nabench/selfknow/prompts.yaml).
_SLOT = re.compile(r"category: (\w+); type: (.+?); reason: (.+?)\. This is task \d+ of")
# (category, type name, reason name, times this prompt was seen) -> the task's type name to
# write, or None for an answer that is no JSON at all.
TypeRule = Callable[[str, str, str, int], str | None]


def on_plan(_category: str, type_name: str, _reason: str, _seen: int) -> str | None:
    return type_name


def openai_model(recipe: dict[str, Any], url: str) -> dict[str, Any]:
    """`recipe` with its generator (and so its classifier) on the scripted server."""
    generator = {k: v for k, v in recipe["generator"].items() if k != "options"}
    model = {"backend": "openai", "base_url": url, "model": "scripted-model", "concurrency": 4}
    return {**recipe, "generator": {**generator, **model}}


def responder(rule: TypeRule = on_plan) -> Callable[[str, dict[str, Any], int], tuple[int, Any]]:
    """Generation: the slot's own category and reason, the type `rule` names and a distinct
    task text per prompt and seed; classification: always `feasible`."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def respond(_path: str, body: dict[str, Any], _n: int) -> tuple[int, Any]:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "write short test tasks" not in system:
            verdict = {"task_class": "feasible", "answer": "ok", "reason": ""}
            if "analysis" in json.dumps(body.get("response_format", {})):
                verdict["analysis"] = "fine"
            return 200, chat_body(json.dumps(verdict))
        match = _SLOT.search(user)
        assert match, user
        category, type_name, reason = match.groups()
        with lock:
            seen[user] += 1
            times = seen[user]
        written = rule(category, type_name, reason, times)
        if written is None:
            return 200, chat_body("I cannot answer in JSON.")
        digest = hashlib.sha256(f"{user}{body.get('seed')}".encode()).hexdigest()[:48]
        task = {"category": category, "type": written, "reason": reason, "task": f"Do {digest}."}
        return 200, chat_body(json.dumps(task))

    return respond
