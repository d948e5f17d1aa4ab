"""Fixtures of the artifact-suite tests: real MMLU / ARC items read through the source
loaders (never copied into the repository) and full builds shared by the build tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.sources import get_source


@pytest.fixture(scope="session")
def mmlu_test(mmlu_dir: Path) -> pa.Table:
    return get_source("mmlu").load("test", location=str(mmlu_dir), config="all", seed=0).items


@pytest.fixture(scope="session")
def mmlu_dev(mmlu_dir: Path) -> pa.Table:
    return get_source("mmlu").load("dev", location=str(mmlu_dir), config="all", seed=0).items


@pytest.fixture(scope="session")
def arc_test(arc_dir: Path) -> pa.Table:
    source = get_source("arc_challenge")
    return source.load("test", location=str(arc_dir), config="ARC-Challenge", seed=0).items


@pytest.fixture(scope="session")
def arc_train(arc_dir: Path) -> pa.Table:
    source = get_source("arc_challenge")
    return source.load("train", location=str(arc_dir), config="ARC-Challenge", seed=0).items


@pytest.fixture(scope="session")
def mmlu_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    """The full MMLU test build (dev 5-shot), shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("mmlu") / "mmlu-artifacts"
    options = BuildOptions(source=str(mmlu_dir), out=out, progress=False)
    return build_artifacts(load_recipe("mmlu-artifacts"), options)


@pytest.fixture(scope="session")
def arc_build(tmp_path_factory: pytest.TempPathFactory, arc_dir: Path) -> BuildResult:
    """The full ARC-Challenge test build (25-shot from train)."""
    out = tmp_path_factory.mktemp("arc") / "arc-artifacts"
    options = BuildOptions(source=str(arc_dir), out=out, progress=False)
    return build_artifacts(load_recipe("arc-artifacts"), options)
