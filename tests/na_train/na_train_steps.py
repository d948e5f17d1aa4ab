"""`prepare`: an na-train build's first steps (`preparing`) run to their end without the
build driver around them (no staging, no --strict), for tests of the prepared variants."""

from __future__ import annotations

from typing import Any

from nabench.pipelines.na_train import Prepared, preparing


def prepare(*args: Any) -> Prepared:
    steps = preparing(*args)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
