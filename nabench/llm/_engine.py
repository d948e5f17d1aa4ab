"""Engines: how the cache misses of a run reach a backend.

`local` (the default) sends them in chunks to the in-process backend; `ray` (`_ray.py`) sends
them through Ray Data LLM processors. Either way the driver alone writes the response cache,
one transaction per finished batch, so a killed run loses only what was in flight.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from nabench.core.errors import NabenchError

from ._cache import ResponseCache
from ._types import Backend, ChatRequest, Completion

# (cache key, request) pairs in; (cache key, completion) batches out, as each batch finishes.
Work = Sequence[tuple[str, ChatRequest]]
Finished = list[tuple[str, Completion]]


class Engine(ABC):
    """Dispatches the misses of one `run_cached` call."""

    name: ClassVar[str]

    def recover(self, cache: ResponseCache) -> int:
        """Merge results a killed run left behind into `cache`; how many were merged."""
        return 0

    @abstractmethod
    def dispatch(self, backend: Backend, work: Work, chunk_size: int) -> Iterator[Finished]:
        """Complete `work` on `backend`, yielding each finished batch."""

    def describe(self) -> dict[str, Any]:
        """The engine and its settings, for run summaries and cards (no secrets)."""
        return {"engine": self.name}


class LocalEngine(Engine):
    """Today's in-process runner: one `backend.complete` call per chunk."""

    name = "local"

    def dispatch(self, backend: Backend, work: Work, chunk_size: int) -> Iterator[Finished]:
        for start in range(0, len(work), chunk_size):
            chunk = work[start : start + chunk_size]
            comps = backend.complete([r for _, r in chunk])
            if len(comps) != len(chunk):
                raise RuntimeError(
                    f"{backend!r} returned {len(comps)} completions for {len(chunk)} requests"
                )
            yield [(k, c) for (k, _), c in zip(chunk, comps, strict=True)]


ENGINES: dict[str, Callable[..., Engine]] = {"local": LocalEngine}


def register_engine(name: str, factory: Callable[..., Engine]) -> None:
    ENGINES[name] = factory


def make_engine(name: str = "local", options: Mapping[str, Any] | None = None) -> Engine:
    """The engine registered as `name`, configured by `options` (e.g. `ray.*` options)."""
    if name not in ENGINES:
        raise NabenchError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")
    try:
        return ENGINES[name](**dict(options or {}))
    except TypeError as exc:
        raise NabenchError(f"engine {name!r}: {exc}") from None
