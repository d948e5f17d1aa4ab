"""Backend registry: `@register_backend("name")` on a class, `get_backend(name, **options)`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from nabench.core.errors import NabenchError

from ._types import Backend

B = TypeVar("B", bound=type[Backend])

BACKENDS: dict[str, type[Backend]] = {}


def register_backend(name: str) -> Callable[[B], B]:
    """Class decorator: make a backend class available to `get_backend(name)`."""

    def deco(cls: B) -> B:
        if name in BACKENDS and BACKENDS[name] is not cls:
            raise ValueError(f"backend {name!r} is already registered")
        cls.name = name
        BACKENDS[name] = cls
        return cls

    return deco


def get_backend(name: str, **options: Any) -> Backend:
    """Instantiate the backend registered as `name` with `options`."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise NabenchError(f"unknown LLM backend {name!r}; known backends: {known}") from None
    try:  # an option the constructor does not take is the user's error, not a crash
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise NabenchError(f"backend {name!r}: {exc} (check --option / options:)") from None
    return cls(**options)
