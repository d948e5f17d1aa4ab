"""Hypothesis profiles and the named example budgets every property test uses.

A property's budget follows what one example costs, measured one test at a time
(`python -m pytest -p no:randomly --durations=0 tests/...` under each profile), so the cheap
properties search hard and the costly ones still search, without one of them taking minutes:

    budget      ci      dev    for
    CHEAP       1000    100    pure functions on small values (parsing, scoring, stats)
    MODERATE    300     50     a batch of texts or a small table per example (pattern
                               grammar, text cache, self-knowledge tables, builders)
    COSTLY      100     25     a whole build, a pandera validation or a file write per example

Measured under the `ci` profile on the shared 2-core machine (heavily loaded, 2026-12-02):
at 1000 examples the option-pattern grammar properties took 90-155 s each, the text cache
77 s, the self-knowledge table properties 40-58 s; the pandera property takes 88 s at 100.
Everything left CHEAP took under 35 s there at 1000.

The `ci` profile is derandomised: the same examples every run, so a CI failure reproduces
with `HYPOTHESIS_PROFILE=ci python -m pytest TEST`. `.ci/run` selects it; locally `dev` is
the default (random, so runs keep exploring). Use as a decorator: `@CHEAP` above `@given`.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

BUDGETS: dict[str, dict[str, int]] = {
    "ci": {"CHEAP": 1000, "MODERATE": 300, "COSTLY": 100},
    "dev": {"CHEAP": 100, "MODERATE": 50, "COSTLY": 25},
}

settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True)
settings.register_profile("dev", deadline=None)


def profile_name() -> str:
    """The profile this run uses: $HYPOTHESIS_PROFILE, else `ci` under CI, else `dev`."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    if name not in BUDGETS:
        raise SystemExit(f"HYPOTHESIS_PROFILE={name!r}: expected one of {', '.join(BUDGETS)}")
    return name


PROFILE = profile_name()
settings.load_profile(PROFILE)

# Built after load_profile, so each inherits the profile's deadline and derandomisation.
CHEAP = settings(max_examples=BUDGETS[PROFILE]["CHEAP"])
MODERATE = settings(max_examples=BUDGETS[PROFILE]["MODERATE"])
COSTLY = settings(max_examples=BUDGETS[PROFILE]["COSTLY"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A property test without a named budget is refused: its example count would silently
    be the profile's default (this module is a pytest plugin, see tests/conftest.py)."""
    allowed = set(BUDGETS[PROFILE].values())
    for item in items:
        func = getattr(item, "obj", None)
        if not getattr(func, "is_hypothesis_test", False):
            continue
        chosen = getattr(func, "_hypothesis_internal_use_settings", None)
        if chosen in (None, settings.default) or chosen.max_examples not in allowed:
            raise pytest.UsageError(
                f"{item.nodeid}: property test without a budget; decorate it with "
                "@CHEAP, @MODERATE or @COSTLY from property_settings"
            )
