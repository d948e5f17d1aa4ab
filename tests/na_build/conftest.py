from __future__ import annotations

from pathlib import Path

import pytest

from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult


@pytest.fixture(scope="session")
def mmlu_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    """The full MMLU test build (no labels), shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("mmlu") / "mmlu-na"
    return build(
        load_recipe("mmlu-na"),
        BuildOptions(source=str(mmlu_dir), out=out, labels="none", progress=False),
    )
