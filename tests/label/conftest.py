from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def local_backend() -> Iterator[Any]:
    from nabench.llm import LocalBackend

    backend = LocalBackend(n_ctx=2048)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def llama_server_url() -> Iterator[str]:
    from nabench.llm import local_server

    with local_server() as url:
        yield url
