"""Bounded waits and bounded responses for HTTP model servers (the `openai` backend, Ray).

httpx's timeouts bound each socket operation, not a request: a server that drips one byte
every few seconds is never timed out, and one that answers 30 MB is read whole. `Limits`
states the three deadlines and the size cap; `BoundedTransport` wraps httpx's transport so
that every attempt ends by its deadline and by the total deadline of the request (set per
thread by `total_deadline`; the client retries only as many times as attempts x deadline
fit in the total, `Limits.retries`), and a body over `max_response_bytes` is
refused while it streams in, never held whole.

Not bounded: a server that drips the status line and headers themselves (each byte inside
the read timeout) is cut at the read timeout of each socket read only; the body, where a
drip costs memory and time, is bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx  # the HTTP layer openai and the Hub client use

from nabench.core.errors import NabenchError

__all__ = ["BoundedTransport", "Limits", "ResponseTooLarge", "total_deadline"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Deadlines of one request to a model server (README, "Bounded waits")."""

    connect_s: float = 30.0  # TCP (and TLS) connect of one attempt
    attempt_s: float = 120.0  # one attempt, from sending to the last body byte
    total_s: float = 600.0  # the request with every retry (attempts x attempt_s fit in it)
    max_response_bytes: int = 8 * MiB

    def __post_init__(self) -> None:
        for name in ("connect_s", "attempt_s", "total_s"):
            if not getattr(self, name) > 0:
                raise NabenchError(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.max_response_bytes < 1024:
            raise NabenchError("max_response_bytes must be at least 1024")

    def retries(self, wanted: int) -> int:
        """Retries that fit the total: attempts x `attempt_s` <= `total_s` (the client's
        back-off waits, 0.5 s doubling to at most 8 s, come on top of the attempts)."""
        return max(0, min(int(wanted), int(self.total_s // self.attempt_s) - 1))

    def httpx_timeout(self) -> httpx.Timeout:
        """Per socket operation: no single read or connect outlives the attempt."""
        return httpx.Timeout(self.attempt_s, connect=min(self.connect_s, self.attempt_s))


class ResponseTooLarge(httpx.TransportError):
    """A response body over `Limits.max_response_bytes`: refused, not read whole."""


_local = threading.local()


@contextmanager
def total_deadline(seconds: float) -> Iterator[None]:
    """Every HTTP attempt this thread makes inside the block ends by now + `seconds`."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


class BoundedTransport(httpx.BaseTransport):
    """httpx transport that enforces `Limits` on every attempt (see module docstring)."""

    def __init__(self, limits: Limits, inner: httpx.BaseTransport | None = None) -> None:
        self.limits = limits
        self.inner = inner or httpx.HTTPTransport()

    def _end(self) -> float:
        end = time.monotonic() + self.limits.attempt_s
        total: float | None = getattr(_local, "deadline", None)
        return end if total is None else min(end, total)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        end = self._end()
        if time.monotonic() >= end:
            raise httpx.ReadTimeout("the request's total deadline has passed", request=request)
        # A compressed body would be inflated after the size check: ask for the raw bytes.
        request.headers["Accept-Encoding"] = "identity"
        response = self.inner.handle_request(request)
        try:
            body = self._read(response, request, end)
        finally:
            response.close()
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            content=body,
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
            request=request,
        )

    def _read(self, response: httpx.Response, request: httpx.Request, end: float) -> bytes:
        cap = self.limits.max_response_bytes
        encoding = response.headers.get("content-encoding", "identity").lower()
        if encoding not in ("", "identity"):
            raise ResponseTooLarge(
                f"server sent a {encoding}-compressed response though asked for identity: "
                "refused (its inflated size cannot be bounded)",
                request=request,
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise ResponseTooLarge(self._too_large(int(declared)), request=request)
        body = bytearray()
        stream: Any = response.stream
        for chunk in stream:
            body += chunk
            if len(body) > cap:
                raise ResponseTooLarge(self._too_large(len(body)), request=request)
            if time.monotonic() > end:
                raise httpx.ReadTimeout(
                    f"response not complete within the deadline ({self.limits.attempt_s:g} s "
                    f"per attempt, {self.limits.total_s:g} s per request)",
                    request=request,
                )
        return bytes(body)

    def _too_large(self, size: int) -> str:
        cap = self.limits.max_response_bytes
        return f"response of {size} bytes or more is over the {cap // MiB} MiB cap: refused"

    def close(self) -> None:
        self.inner.close()
