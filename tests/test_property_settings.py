"""The named Hypothesis budgets (tests/property_settings.py): every property test has one,
and the CI profile gives the same examples on every run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CONFTEST = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
CONFTEST += "pytest_plugins = ('property_settings',)\n"


def _suite(pytester: pytest.Pytester, test: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_props="from hypothesis import given, settings, strategies as st\n"
        "from property_settings import CHEAP\n\n" + test
    )
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")


def test_a_property_without_a_budget_is_refused(pytester: pytest.Pytester) -> None:
    result = _suite(pytester, "@given(st.integers())\ndef test_p(x):\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_props.py::test_p: property test without a budget" in result.stderr.str()


def test_an_unnamed_count_is_refused(pytester: pytest.Pytester) -> None:
    test = "@settings(max_examples=7)\n@given(st.integers())\ndef test_p(x):\n    pass\n"
    result = _suite(pytester, test)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_budgeted_property_runs_its_budget(pytester: pytest.Pytester) -> None:
    test = "SEEN = []\n\n@CHEAP\n@given(st.integers())\ndef test_p(x):\n    SEEN.append(x)\n\n"
    test += "def test_count():\n    assert len(SEEN) == CHEAP.max_examples, len(SEEN)\n"
    _suite(pytester, test).assert_outcomes(passed=2)


def _ci_examples() -> str:
    code = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r})\n"
        "from hypothesis import given, strategies as st\n"
        "from property_settings import CHEAP\n"
        "seen = []\n"
        "@CHEAP\n@given(st.text())\ndef p(x):\n    seen.append(x)\n"
        "p(); print(repr(seen[:50]))\n"
    )
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ci_profile_is_derandomised() -> None:
    """Two separate CI runs draw the same examples, so a CI failure reproduces."""
    assert _ci_examples() == _ci_examples()
