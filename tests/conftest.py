"""Shared test fixtures: paths to the real data beside the checkout and to our own fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from testdeps import olah_python, require  # noqa: F401 - the helpers live in tests/testdeps.py

# Where PYTHONDONTWRITEBYTECODE is set (this machine sets it), pytest would rewrite the asserts
# of every test module again at each collection, in each xdist worker: 14 s CPU for the
# fast lane's modules against 7 s with the cache. Test modules are imported after this
# conftest, so their rewritten bytecode is cached (in the gitignored __pycache__ folders).
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATA = SHARED / "data"
FIXTURES = REPO / "tests" / "fixtures"

pytest_plugins = (
    "pytester",  # tests the two plugins below
    "fixtures.guard",  # fails an unmarked test that loads a model or starts a server
    "property_settings",  # refuses a property test without a named example budget
    "fixtures.models",  # the one local SmolLM2 backend and the one llama.cpp server
    "fixtures.scripted",  # a scripted OpenAI-compatible server on 127.0.0.1
    "fixtures.builds",  # the standard builds, once per session, read-only
)

_COUNTS = {"selected": 0, "deselected": 0}


def pytest_deselected(items: list[pytest.Item]) -> None:
    _COUNTS["deselected"] += len(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    _COUNTS["selected"] = len(session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist (`-n`), each worker collects; it hands its counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["nabench_counts"] = dict(_COUNTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The xdist controller: every worker collected the same tests, so one worker's counts
    are the run's."""
    counts = getattr(node, "workeroutput", {}).get("nabench_counts")
    if counts:
        _COUNTS.update(counts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line CI logs can be compared on: did the same number of tests run?"""
    import property_settings  # registered as a plugin above; importing it first would warn

    ran = sum(len(terminalreporter.stats.get(k, [])) for k in ("passed", "failed", "error"))
    skipped = len(terminalreporter.stats.get("skipped", []))
    collected = _COUNTS["selected"] + _COUNTS["deselected"]
    terminalreporter.write_line(
        f"nabench suite: {collected} collected, {_COUNTS['deselected']} deselected, "
        f"{ran} ran, {skipped} skipped (profile {property_settings.PROFILE})"
    )


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
