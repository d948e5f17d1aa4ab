"""Shared test fixtures: paths to the real data beside the checkout and to our own fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings
from testdeps import olah_python, require  # noqa: F401 - the helpers live in tests/testdeps.py

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATA = SHARED / "data"
FIXTURES = REPO / "tests" / "fixtures"

# The guard fails a test not marked slow that loads a model or starts a server (the fast
# lane's marker cannot lie); pytester tests the guard itself.
pytest_plugins = ("pytester", "fixtures.guard")

# CI runs every property with at least 1,000 examples; locally `dev` keeps runs short.
settings.register_profile("ci", max_examples=1000, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"real data missing: {path} (expected ../shared beside the checkout)")
    return path


@pytest.fixture(scope="session")
def mmlu_dir() -> Path:
    return _require(DATA / "cais__mmlu")


@pytest.fixture(scope="session")
def arc_dir() -> Path:
    return _require(DATA / "allenai__ai2_arc")


@pytest.fixture(scope="session")
def hellaswag_dir() -> Path:
    return FIXTURES / "hellaswag"


@pytest.fixture(scope="session")
def gpqa_dir() -> Path:
    return FIXTURES / "gpqa"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return _require(SHARED / "reference")
