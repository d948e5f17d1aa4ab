"""Fixtures for the model-layer tests: a temp response cache. The real SmolLM2 backend and
llama.cpp server (tests/fixtures/models.py) and the scripted server
(tests/fixtures/scripted.py) are session-wide plugins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nabench.llm import ResponseCache


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.sqlite") as c:
        yield c
