"""Open the backend a `ModelSpec` describes (`open_backend`), engine included: the one way
every model job (label, eval, selfknow, na-train, question inference) opens its model, from
the command-line model flags or a recipe's model section alike."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.llm._engine import ENGINES, make_engine
from nabench.llm._registry import get_backend
from nabench.llm._types import Backend
from nabench.schemas.model import ModelSpec


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
    if backend == "openai":
        flags = {"model": model, "base_url": base_url, "concurrency": concurrency}
    else:  # in-process backends: a GGUF path (local) or a model dir/id
        flags = {"model_path" if backend == "local" else "model": model}
    return {**{k: v for k, v in flags.items() if v is not None}, **dict(options or {})}


def engine_settings(spec: ModelSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(options of the spec's engine, backend options). Options named `ENGINE.KEY` (e.g.
    `ray.qps`) and a recipe's `ray:` section configure that engine (options win); they are
    refused with another engine rather than dropped, and never reach the backend."""
    engines: dict[str, dict[str, Any]] = {"ray": dict(spec.ray)} if spec.ray else {}
    backend_options: dict[str, Any] = {}
    for key, value in spec.options.items():
        engine, dot, name = key.partition(".")
        if not dot:
            backend_options[key] = value
        elif engine in ENGINES:
            engines.setdefault(engine, {})[name] = value
        else:
            raise NabenchError(f"option {key!r}: unknown engine {engine!r} ({', '.join(ENGINES)})")
    stray = sorted(set(engines) - {spec.engine})
    if stray:
        raise NabenchError(
            f"{stray[0]}.* options apply to engine {stray[0]!r} only; this job's engine is "
            f"{spec.engine!r} (use --engine {stray[0]} / engine: {stray[0]})"
        )
    return engines.get(spec.engine, {}), backend_options


def open_backend(spec: ModelSpec) -> Backend:
    """The backend `spec` describes, carrying its engine, so every `run_cached` call on it
    dispatches through that engine (close it, or use it in a `with`). The one way every
    model job opens its model."""
    engine_options, backend_options = engine_settings(spec)
    engine = make_engine(spec.engine, engine_options)  # checked before a model is loaded
    backend = get_backend(
        spec.backend,
        **backend_kwargs(
            spec.backend, spec.model, spec.base_url, spec.concurrency, backend_options
        ),
    )
    backend.engine = engine
    return backend


def engine_record(backend: Backend) -> dict[str, Any]:
    """The engine a backend dispatches through and its settings (no URLs), for run records."""
    engine = backend.engine
    return engine.describe() if engine is not None else {"engine": "local"}


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
    """What the model flags of one invocation say: the model (a `ModelSpec`) and the
    response cache."""

    spec: ModelSpec
    cache: Path | None = None

    def open_backend(self) -> Backend:
        """`open_backend(self.spec)`."""
        return open_backend(self.spec)

    def cache_path(self, default: Path | None = None) -> Path:
        """--cache, else `default`, else $NABENCH_CACHE or ~/.cache/nabench/responses.sqlite."""

        return self.cache or default or default_cache_path()
