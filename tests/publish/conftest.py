"""Small real MMLU builds shared by the publish tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from publish_helpers import build_mmlu


@pytest.fixture(scope="session")
def staged_v1(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("v1") / "mmlu-na"
    build_mmlu(mmlu_dir, out)
    return out
