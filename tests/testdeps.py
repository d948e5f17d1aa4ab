"""Test dependencies: a missing one fails under CI (`CI` set, as .ci/run does) and skips a
local run with a line naming what to install. Import from here (`from testdeps import
require`); tests/conftest.py re-exports both helpers."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def require(module: str, why: str = "") -> Any:
    """Import `module` for a test; a missing one fails the test when `CI` is set (so CI never
    goes green by skipping) and skips it otherwise, naming what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _missing(f"{module} is not installed{f' ({why})' if why else ''}: {exc}")


def installed(module: str, why: str = "") -> None:
    """Like `require`, without importing `module` into the test process (for tests that
    only need it in a child process, where importing it here would cost seconds)."""
    if importlib.util.find_spec(module) is None:
        _missing(f"{module} is not installed{f' ({why})' if why else ''}")


def olah_python() -> Path:
    """The interpreter of the olah venv that .ci/run creates (olah is not in nabench's venv)."""
    python = Path(os.environ.get("OLAH_PYTHON", REPO / ".venv-olah" / "bin" / "python"))
    if not python.exists():
        message = f"olah venv missing: {python} (python3 -m venv .venv-olah && "
        message += ".venv-olah/bin/pip install olah==0.5.4, or set OLAH_PYTHON)"
        _missing(message)
    return python
