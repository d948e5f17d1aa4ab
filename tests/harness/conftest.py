"""Fixtures for the harness tests: small real builds of mmlu-na and arc-na (no labels)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions


@pytest.fixture(scope="session")
def mmlu_na(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("harness") / "mmlu-na"
    opts = BuildOptions(source=str(mmlu_dir), out=out, labels="none", limit=60, progress=False)
    return build(load_recipe("mmlu-na"), opts).out


@pytest.fixture(scope="session")
def arc_na(tmp_path_factory: pytest.TempPathFactory, arc_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("harness") / "arc-na"
    opts = BuildOptions(source=str(arc_dir), out=out, labels="none", limit=30, progress=False)
    return build(load_recipe("arc-na"), opts).out


@pytest.fixture(scope="session")
def inspect_entry_point() -> None:
    """`inspect eval nabench/mcq` needs the entry point of an up-to-date install."""
    names = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    if names.get("nabench") != "nabench.stage.exports.inspect_mcq":
        pytest.fail("no inspect_ai entry point 'nabench': reinstall with pip install -e .")
