"""Shared fixtures of the safety tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from safety_helpers import build_args, nabench


@pytest.fixture(scope="session")
def plain_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    """A small mmlu-na build without labels; tests copy it before they change anything."""
    out = tmp_path_factory.mktemp("plain") / "mmlu-na"
    run = nabench(*build_args(mmlu_dir, out, "--labels", "none"), "mmlu-na")
    assert run.code == 0, run.stderr
    return out
