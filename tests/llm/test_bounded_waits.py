"""Every request to a model server ends by a deadline and never holds a huge body (issue 24,
finding 7: 738 s for one request to a silent server; a dripping server never timed out; a
30 MB response kept whole). Real loopback sockets, the real openai client."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from nabench.llm import ChatRequest
from nabench.llm._openai import OpenAIBackend

REQ = ChatRequest(messages=(("user", "Answer A."),), max_tokens=4)


@contextmanager
def tcp_server(serve: Callable[[socket.socket], None]) -> Iterator[str]:
    """A raw TCP server on 127.0.0.1 whose every connection is handled by `serve`."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    conns: list[socket.socket] = []

    def loop() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()
        for conn in conns:
            conn.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(h.split(b":")[1])
            for h in head.split(b"\r\n")
            if h.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(body) < length:
        body += conn.recv(65536)


def silent(conn: socket.socket) -> None:
    """Accepts, reads the request, never answers."""
    try:
        _read_request(conn)
        time.sleep(600)
    except OSError:
        pass


def dripping(conn: socket.socket) -> None:
    """Answers 200 with a long body, one byte a second."""
    try:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n")  # fmt: skip
        for _ in range(100000):
            conn.sendall(b" ")
            time.sleep(1.0)
    except OSError:
        pass


def dripping_headers(conn: socket.socket) -> None:
    """Answers 200 and then drips its headers, one byte a second, never ending them."""
    try:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
        for _ in range(100000):
            conn.sendall(b"x")
            time.sleep(1.0)
    except OSError:
        pass


def huge(conn: socket.socket) -> None:
    """A valid chat completion whose content is 30 MB."""
    body = json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "A" * 30_000_000}}],
    }).encode()  # fmt: skip
    try:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode())  # fmt: skip
        conn.sendall(body)
    except OSError:
        pass


@pytest.mark.parametrize(
    "serve", [silent, dripping, dripping_headers], ids=["silent", "dripping", "dripping-headers"]
)
def test_a_silent_or_dripping_server_fails_the_request_by_its_attempt_deadlines(
    serve: Callable[[socket.socket], None],
) -> None:
    """Each attempt ends at `timeout_s` even while bytes keep arriving (the dripping server
    sends one a second, inside any per-read timeout): 2 attempts of 2 s and one back-off
    wait, not the 100,000 s the body would take. (With the defaults, 6 attempts of 5 s took
    43 s here; the bound per attempt is what is under test, so two attempts prove it.)"""
    with tcp_server(serve) as url:
        backend = OpenAIBackend(model="m", base_url=url, api_key="k", timeout_s=2, max_retries=1)
        try:
            start = time.monotonic()
            [done] = backend.complete([REQ])
            elapsed = time.monotonic() - start
        finally:
            backend.close()
    assert done.error is not None and done.text == ""
    assert 4 <= elapsed < 4 + 1 + 5, elapsed  # two full attempts, a back-off, slack
    assert "Timeout" in done.error or "deadline" in done.error, done.error


@pytest.mark.slow  # no model, but 43 s of waiting: kept out of the everyday loop
def test_at_timeout_s_5_a_silent_and_a_dripping_server_fail_within_60_s() -> None:
    """The issue's own setting: `--option timeout_s=5` with the default retries (6 attempts
    of 5 s and the client's back-off) ends within 60 s on both servers, run side by side."""

    def one(serve: Callable[[socket.socket], None]) -> tuple[str | None, float]:
        with tcp_server(serve) as url:
            backend = OpenAIBackend(model="m", base_url=url, api_key="k", timeout_s=5)
            try:
                start = time.monotonic()
                [done] = backend.complete([REQ])
                return done.error, time.monotonic() - start
            finally:
                backend.close()

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, [silent, dripping]))
    for error, elapsed in results:
        assert error is not None and ("Timeout" in error or "deadline" in error), error
        assert 6 * 5 <= elapsed < 60, elapsed


def test_the_total_deadline_bounds_all_retries() -> None:
    with tcp_server(silent) as url:
        backend = OpenAIBackend(
            model="m", base_url=url, api_key="k", timeout_s=2, total_timeout_s=5, max_retries=50
        )
        try:
            start = time.monotonic()
            [done] = backend.complete([REQ])
            elapsed = time.monotonic() - start
        finally:
            backend.close()
    assert done.error is not None
    # attempts x 2 s fit in 5 s: 2 attempts and one back-off wait (< 1 s), not 51 x 2 s.
    assert backend._client.max_retries == 1
    assert elapsed < 8, elapsed


def test_a_30_mb_response_is_refused() -> None:
    with tcp_server(huge) as url:
        backend = OpenAIBackend(model="m", base_url=url, api_key="k", max_retries=0)
        try:
            [done] = backend.complete([REQ])
        finally:
            backend.close()
    assert done.error is not None and "8 MiB cap" in done.error, done.error
    assert done.text == ""


@pytest.mark.parametrize("serve", [silent, dripping, huge], ids=["silent", "dripping", "30MB"])
def test_ray_sessions_carry_the_same_bounds(serve: Callable[[socket.socket], None]) -> None:
    """`--engine ray` sends through Ray's aiohttp stage: its session has the deadlines and
    the cap of the backend."""
    import asyncio

    import aiohttp

    from nabench.llm._ray_limits import BoundedSessionFactory

    factory = BoundedSessionFactory(connect_s=2, attempt_s=3, max_response_bytes=8 * 2**20)

    async def post(url: str) -> object:
        async with factory() as session, session.post(f"{url}/chat/completions", json={}) as r:
            return await r.json()

    with tcp_server(serve) as url:
        start = time.monotonic()
        with pytest.raises((TimeoutError, aiohttp.ClientPayloadError)) as err:
            asyncio.run(post(url))
        elapsed = time.monotonic() - start
    assert elapsed < 6, elapsed
    if serve is huge:
        assert "8 MiB cap" in str(err.value)
