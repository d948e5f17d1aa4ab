"""Shared fixtures for the self-knowledge tests.

The released Line of Duty results are read in place from the ``shared`` folder beside the
repository checkout (CI keeps it beside its clone too); they are never copied into the repo.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
