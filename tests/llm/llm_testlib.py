"""Helpers shared by the model-layer tests (imported by name; conftest.py holds fixtures).
The scripted OpenAI-compatible server lives in tests/fixtures/scripted.py (re-exported)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fixtures.scripted import Scripted, chat_body, start_scripted_server

from nabench.llm import ChatRequest

__all__ = ["Scripted", "chat_body", "start_scripted_server"]

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["A", "B", "C", "D"]}},
    "required": ["answer"],
    "additionalProperties": False,
}

SYSTEM = "You answer multiple-choice questions. Reply with the letter of the correct option."

QUESTIONS = [
    ("What is 2 + 3?", ["4", "5", "6", "7"]),
    ("Which planet is closest to the Sun?", ["Venus", "Earth", "Mercury", "Mars"]),
    ("What colour is the sky on a clear day?", ["Green", "Blue", "Red", "Yellow"]),
    ("Which animal barks?", ["Cat", "Cow", "Dog", "Fish"]),
    ("What is the capital of France?", ["Berlin", "Madrid", "Rome", "Paris"]),
    ("How many legs does a spider have?", ["6", "8", "10", "4"]),
    ("Water freezes at what Celsius temperature?", ["0", "10", "100", "-10"]),
    ("Which gas do plants absorb?", ["Oxygen", "Nitrogen", "Carbon dioxide", "Helium"]),
]


def mc_prompt(question: str, choices: list[str]) -> str:
    letters = "ABCD"
    opts = "\n".join(f"{letters[i]}. {c}" for i, c in enumerate(choices))
    return f"{question}\n{opts}\nAnswer:"


def mc_requests(n: int, **options: Any) -> list[ChatRequest]:
    """`n` distinct chat requests sharing the system prompt."""
    out = []
    for i in range(n):
        q, ch = QUESTIONS[i % len(QUESTIONS)]
        out.append(ChatRequest.chat(f"[{i}] " + mc_prompt(q, ch), system=SYSTEM, **options))
    return out


# -- seeded samples: the same text whatever else is in flight --------------------------

PROBE_SYSTEM = SYSTEM + " " + " ".join(f"Rule {i}: read every option carefully." for i in range(20))
SAMPLED = {"temperature": 1.0, "max_tokens": 16}


def seeded_probes() -> list[ChatRequest]:
    """Seeded samples of two prompts, seeds s and s+1 each (as `na-train` sends them)."""
    prompts = ["Name a colour and say why you like it.", "Name an animal and describe it."]
    return [
        ChatRequest.chat(p, system=PROBE_SYSTEM, seed=700 + 10 * i + j, **SAMPLED)
        for i, p in enumerate(prompts)
        for j in range(2)
    ]


def greedy(req: ChatRequest) -> ChatRequest:
    """`req` decoded greedily: it shares the whole prompt, so it leaves its prefix cached."""
    return replace(req, temperature=0.0, seed=None)


def probe_company(probes: list[ChatRequest]) -> list[ChatRequest]:
    """`probes` (each prompt's samples back to back) among other requests: another prompt
    sampled with a probe's seed, greedy chat requests (one on a probe's own prompt) and a
    greedy raw-prompt request."""
    others = [
        greedy(probes[0]),
        ChatRequest.chat("Name a city.", system=PROBE_SYSTEM, seed=probes[0].seed, **SAMPLED),
        ChatRequest.chat("Say hi.", system=PROBE_SYSTEM, max_tokens=8),
        ChatRequest(prompt="1, 2, 3,", max_tokens=4),
    ]
    half = len(probes) // 2
    return others[:1] + probes[:half] + others[1:3] + probes[half:] + others[3:]


def seeded_sample_texts(backend: Any) -> dict[str, list[str]]:
    """The texts of `seeded_probes()` sent alone (each after the one before, which shares
    its system prompt or its whole prompt), in `probe_company`, and after a greedy batch of
    their own prompts."""
    probes = seeded_probes()
    out = {"alone": [backend.complete([p])[0].text for p in probes]}
    mixed = probe_company(probes)
    batch = backend.complete(mixed)
    out["in a batch"] = [batch[mixed.index(p)].text for p in probes]
    backend.complete([greedy(p) for p in probes])
    out["after its prefix"] = [backend.complete([p])[0].text for p in probes]
    return out


def assert_seeded_samples_reproducible(backend: Any) -> None:
    """Every condition of `seeded_sample_texts`, twice in a row, gives the same texts."""
    first = seeded_sample_texts(backend)
    second = seeded_sample_texts(backend)
    reference = first["alone"]
    assert len(set(reference)) > 1, reference  # different seeds, different samples
    for run, texts in (("first", first), ("second", second)):
        for condition, got in texts.items():
            differ = [i for i, (g, r) in enumerate(zip(got, reference, strict=True)) if g != r]
            assert not differ, f"{run} run, {condition}: probes {differ} differ from alone"
