"""Bounded waits and bounded responses for HTTP model servers (the `openai` backend, Ray).

httpx's timeouts bound each socket operation, not a request: a server that drips one byte
every few seconds is never timed out, and one that answers 30 MB is read whole. `Limits`
states the three deadlines and the size cap; `BoundedTransport` wraps httpx's transport so
that every attempt ends by its deadline and by the total deadline of the request (set per
thread by `total_deadline`; the client retries only as many times as attempts x deadline
fit in the total, `Limits.retries`), and a body over `max_response_bytes` is
refused while it streams in, never held whole.

The status line and headers are bounded too: every socket read and write of an attempt is
given at most the time left to its deadline (`_DeadlineBackend`, httpcore's network backend
under httpx's transport), so a server dripping its headers one byte a second inside any
per-read timeout is cut at the attempt's deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpcore2 as httpcore  # httpx2's own connection layer (its network backend)
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


def _time_left(timeout: float | None) -> float | None:
    """`timeout` cut to what is left of this thread's attempt deadline (if one is set)."""
    end: float | None = getattr(_local, "attempt_end", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the attempt's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _time_left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _time_left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(
            self.inner.start_tls(ssl_context, server_hostname, _time_left(timeout))
        )

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with every connection a `_DeadlineStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:  # fmt: skip
        stream = self.inner.connect_tcp(host, port, _time_left(timeout), local_address,
                                        socket_options)  # fmt: skip
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:  # fmt: skip
        return _DeadlineStream(
            self.inner.connect_unix_socket(path, _time_left(timeout), socket_options)
        )

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _deadline_transport() -> httpx.HTTPTransport:
    """httpx's own transport over a `_DeadlineBackend`. httpx takes no network backend, so
    it is set on the transport's connection pool (httpcore's documented `network_backend`,
    read by every connection the pool opens)."""
    transport = httpx.HTTPTransport()
    pool: Any = transport._pool
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return transport


class BoundedTransport(httpx.BaseTransport):
    """httpx transport that enforces `Limits` on every attempt (see module docstring)."""

    def __init__(self, limits: Limits, inner: httpx.BaseTransport | None = None) -> None:
        self.limits = limits
        self.inner = inner or _deadline_transport()

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
        previous = getattr(_local, "attempt_end", None)
        _local.attempt_end = end  # every socket operation below ends by it
        try:
            response = self.inner.handle_request(request)
            try:
                body = self._read(response, request, end)
            finally:
                response.close()
        finally:
            _local.attempt_end = previous
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
