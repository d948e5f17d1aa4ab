"""Requests, completions and the backend interface shared by every model backend."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

Message = tuple[str, str]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_json(schema: Mapping[str, Any] | str) -> str:
    """A JSON schema as the canonical string that `ChatRequest.json_schema` holds."""
    if isinstance(schema, str):
        schema = json.loads(schema)
    return canonical_json(schema)


@dataclass(frozen=True)
class ChatRequest:
    """One generation request: chat `messages` or a raw completion `prompt`, never both.

    Frozen and hashable; `canonical_json()` is what the response cache hashes.
    """

    messages: tuple[Message, ...] | None = None
    prompt: str | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    json_schema: str | None = None
    logprobs: int | None = None
    seed: int | None = None
    # Tokens before end-of-sequence may be sampled: 1 makes a one-token logprobs request
    # return a token (and its top-k) even where end-of-sequence is the likeliest one.
    min_tokens: int = 0

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("ChatRequest needs exactly one of `messages` or `prompt`")
        if self.messages is not None:
            msgs = tuple((str(role), str(content)) for role, content in self.messages)
            if not msgs:
                raise ValueError("ChatRequest.messages is empty")
            object.__setattr__(self, "messages", msgs)
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.json_schema is not None:
            object.__setattr__(self, "json_schema", schema_json(self.json_schema))
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if self.logprobs is not None and self.logprobs < 0:
            raise ValueError("logprobs must be >= 0")
        if not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError("min_tokens must be in [0, max_tokens]")

    @classmethod
    def chat(cls, user: str, system: str | None = None, **options: Any) -> ChatRequest:
        """A request of one optional system message and one user message."""
        msgs: list[Message] = [("system", system)] if system is not None else []
        msgs.append(("user", user))
        return cls(messages=tuple(msgs), **options)

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema as a dict (or None)."""
        return None if self.json_schema is None else json.loads(self.json_schema)

    def openai_sampling(self) -> dict[str, Any]:
        """The sampling fields of an OpenAI-style request body (`min_tokens`, which is not an
        OpenAI field, is the caller's to place: the `openai` client needs it in `extra_body`)."""
        out: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if self.stop:
            out["stop"] = list(self.stop)
        if self.seed is not None:
            out["seed"] = self.seed
        return out

    def openai_messages(self) -> list[dict[str, str]]:
        assert self.messages is not None
        return [{"role": role, "content": content} for role, content in self.messages]

    @property
    def seeded_sample(self) -> bool:
        """A sampled request with its own seed: the backends run it alone, without reusing a
        cached prompt prefix, so its text depends on nothing else in flight."""
        return self.temperature > 0 and self.seed is not None

    def prefix_key(self) -> tuple[str, ...]:
        """Sort key that puts requests sharing a prompt prefix next to each other."""
        if self.prompt is not None:
            return (self.prompt,)
        assert self.messages is not None
        return tuple(f"{role}\x00{content}" for role, content in self.messages)

    def canonical_json(self) -> str:
        """Canonical JSON of every field (what the cache key is computed from)."""
        d = asdict(self)
        d["messages"] = None if self.messages is None else [list(m) for m in self.messages]
        d["stop"] = list(self.stop)
        if not self.min_tokens:  # added later: left out at its default, so old keys hold
            del d["min_tokens"]
        return canonical_json(d)


@dataclass(frozen=True)
class TokenLogprob:
    """Log-probability of one generated token and the top-k alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> list[Any]:
        return [self.token, self.logprob, [list(t) for t in self.top]]

    @classmethod
    def from_json(cls, value: Sequence[Any]) -> TokenLogprob:
        token, logprob, top = value
        return cls(str(token), float(logprob), tuple((str(t), float(lp)) for t, lp in top))


@dataclass(frozen=True)
class Completion:
    """The result of one request. Failures carry `error` and are never cached."""

    text: str = ""
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    error: str | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def logprobs_json(self) -> str | None:
        if self.logprobs is None:
            return None
        return json.dumps([t.to_json() for t in self.logprobs], ensure_ascii=False)


@dataclass
class BackendCounters:
    """Mutable counters a backend updates (read by `run_cached` for its stats)."""

    retries: int = 0
    requests: int = 0


class Backend(ABC):
    """A model behind one call: a batch of requests in, completions in the same order out.

    Implementations turn per-request failures into `Completion(error=...)`; `complete`
    raises only for programming errors.
    """

    name: ClassVar[str]
    model_id: str
    counters: BackendCounters
    # How `run_cached` dispatches this backend's cache misses (`_engine.Engine`); None: local.
    engine: Any = None
    # Why this backend cannot answer here (a package or model file not installed), or None:
    # it still opens, so a plan can be printed and a cached run replayed; `run_cached`
    # refuses, in this one line, to send it a request.
    unavailable: str | None = None
    # Set by `run_cached` while it runs: called once per finished request, so progress
    # advances per request, not per chunk (a backend that cannot tell leaves it uncalled).
    on_request_done: Callable[[], None] | None = None

    def _request_done(self) -> None:
        hook = self.on_request_done
        if hook is not None:
            hook()

    def __init__(self) -> None:
        self.counters = BackendCounters()

    @property
    def revision(self) -> str | None:
        """Which weights answer, beyond `model_id`: a content fingerprint of the weights a
        backend loads from disk (``sha256:<hex>``, `nabench.llm._weights`), what the user
        declared for a server's model (`openai`: ``--option revision=...``), or None where
        nothing tells (then the cache key and the records are what they were before).

        It is part of every response-cache key and recorded as ``model_revision`` in eval
        records, so two checkpoints with one file name are two models, never one cache."""
        return None

    @abstractmethod
    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Run a batch; same length and order as `requests`."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model or client (optional)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model_id={self.model_id!r})"


@dataclass
class RunStats:
    """What one `run_cached` / `complete_json` did."""

    total: int = 0
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    elapsed_s: float = 0.0
    prompts_per_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def add(self, other: RunStats) -> None:
        """Accumulate another run's counts (for multi-round runs)."""
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.errors += other.errors
        self.retries += other.retries
        self.elapsed_s += other.elapsed_s
        self.prompts_per_s = self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0
