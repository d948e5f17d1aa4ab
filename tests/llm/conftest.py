"""Fixtures for the model-layer tests: the real SmolLM2 model, a real llama.cpp server,
a scripted loopback HTTP server for retry/concurrency mechanics, a temp response cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from llm_testlib import Scripted, start_scripted_server
from testdeps import require

from nabench.llm import ResponseCache


@pytest.fixture(scope="session")
def llama_cpp() -> Any:
    return require("llama_cpp", "pip install 'nabench[llm]'")


@pytest.fixture(scope="session")
def local_backend(llama_cpp: Any) -> Iterator[Any]:
    from nabench.llm import LocalBackend

    backend = LocalBackend(n_ctx=2048)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def llama_server(llama_cpp: Any) -> Iterator[str]:
    require("uvicorn", "pip install 'nabench[llm]'")
    from nabench.llm import local_server

    with local_server() as url:
        yield url


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.sqlite") as c:
        yield c


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., Scripted]]:
    servers: list[ThreadingHTTPServer] = []

    def start(*args: Any, **kwargs: Any) -> Scripted:
        state, srv = start_scripted_server(*args, **kwargs)
        servers.append(srv)
        return state

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()
