"""Turn the generic command-line flags (--backend, --model, --base-url, --concurrency) into a
backend, so every command (label, eval, selfknow, artifacts) offers the same flags."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.llm._engine import ENGINES, make_engine
from nabench.llm._registry import get_backend
from nabench.llm._types import Backend

# backend name -> how the generic flags map onto its constructor arguments
_FLAG_MAPPERS: dict[str, Callable[[str | None, str | None, int], dict[str, Any]]] = {
    "local": lambda model, base_url, concurrency: {"model_path": model} if model else {},
    "openai": lambda model, base_url, concurrency: {
        k: v
        for k, v in {"model": model, "base_url": base_url, "concurrency": concurrency}.items()
        if v is not None
    },
    "vllm": lambda model, base_url, concurrency: {"model": model} if model else {},
}


def backend_kwargs(
    backend: str,
    model: str | None = None,
    base_url: str | None = None,
    concurrency: int = 8,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Constructor keywords of `backend` for the generic flags plus backend-specific
    `options` (e.g. n_threads, tensor_parallel_size); options win over flags."""
    if base_url and backend != "openai":
        raise NabenchError(f"--base-url applies to the openai backend only, not {backend!r}")
    mapper = _FLAG_MAPPERS.get(backend, lambda m, b, c: {"model": m} if m else {})
    return {**mapper(model, base_url, concurrency), **dict(options or {})}


def split_engine_options(
    options: Mapping[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """`{"ray.qps": 4, "n_threads": 1}` -> ({"ray": {"qps": 4}}, {"n_threads": 1}):
    options named `ENGINE.KEY` configure that engine, the rest the backend."""
    engines: dict[str, dict[str, Any]] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        engine, dot, name = key.partition(".")
        if dot and engine in ENGINES:
            engines.setdefault(engine, {})[name] = value
        elif dot:
            raise NabenchError(f"option {key!r}: unknown engine {engine!r} ({', '.join(ENGINES)})")
        else:
            rest[key] = value
    return engines, rest


def make_backend(
    backend: str,
    model: str | None = None,
    base_url: str | None = None,
    concurrency: int = 8,
    options: Mapping[str, Any] | None = None,
) -> Backend:
    """A backend from the generic flags plus backend-specific `options`."""
    return get_backend(backend, **backend_kwargs(backend, model, base_url, concurrency, options))


def default_cache_path() -> Path:
    """`$NABENCH_CACHE` or ~/.cache/nabench/responses.sqlite: shared by every command."""
    env = os.environ.get("NABENCH_CACHE")
    if env:
        return Path(env)
    return (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "nabench"
        / ("responses.sqlite")
    )


@dataclass(frozen=True)
class ModelFlags:
    """What the model flags of one invocation say."""

    backend: str
    model: str | None
    base_url: str | None
    concurrency: int
    options: dict[str, Any]
    cache: Path | None
    engine: str = "local"  # how cache misses are dispatched: local | ray

    def open_backend(self) -> Backend:
        """The backend these flags describe (close it, or use it in a `with`); it carries
        the engine, so every `run_cached` call on it dispatches through that engine."""
        engine_options, backend_options = split_engine_options(self.options)
        backend = make_backend(
            self.backend, self.model, self.base_url, self.concurrency, backend_options
        )
        if self.engine != "local" or engine_options.get(self.engine):
            backend.engine = make_engine(self.engine, engine_options.get(self.engine))
        return backend

    def cache_path(self, default: Path | None = None) -> Path:
        """--cache, else `default`, else $NABENCH_CACHE or ~/.cache/nabench/responses.sqlite."""

        return self.cache or default or default_cache_path()
