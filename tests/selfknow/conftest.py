"""Shared fixtures for the self-knowledge tests.

The released Line of Duty results are read in place from the ``shared`` folder beside the
repository checkout (CI keeps it beside its clone too); they are never copied into the repo.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testdeps import require

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REFERENCE_RESULTS = SHARED / "reference" / "line_of_duty" / "results"


def _reference_files() -> list[Path]:
    return sorted(REFERENCE_RESULTS.glob("*/*.csv"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise any test taking ``reference_file`` over every released CSV."""
    if "reference_file" in metafunc.fixturenames:
        files = _reference_files()
        metafunc.parametrize(
            "reference_file", files, ids=[f"{p.parent.name}/{p.stem}" for p in files]
        )


@pytest.fixture(scope="session")
def reference_files() -> list[Path]:
    """All 10 released CSVs; fails (rather than skips) when the shared data is missing."""
    assert REFERENCE_RESULTS.is_dir(), f"reference data not found at {REFERENCE_RESULTS}"
    files = _reference_files()
    assert len(files) == 10, files
    return files


@pytest.fixture(scope="session")
def llama_cpp() -> Any:
    return require("llama_cpp", "pip install 'nabench[llm]'")


@pytest.fixture(scope="session")
def local_model(llama_cpp: Any) -> Iterator[Any]:
    """The real SmolLM2-135M-Instruct GGUF on one llama.cpp thread.

    One thread: on a busy, shared 2-core machine llama.cpp's worker threads slow each other
    down several-fold; a 135M model gains little from a second thread anyway.
    """
    from nabench.llm import LocalBackend

    backend = LocalBackend(n_ctx=2048, n_threads=1)
    yield backend
    backend.close()
