"""Golden-file tests: every contributions/<name>/tests.json pair is checked exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nabench.validate.contributions import rebuild

REPO = Path(__file__).resolve().parents[2]
FOLDERS = sorted(p.parent for p in (REPO / "contributions").glob("*/contribution.yaml"))


def test_there_is_a_contribution() -> None:
    assert FOLDERS, "no contributions/<name>/contribution.yaml in the repository"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_golden_pairs(folder: Path) -> None:
    header = yaml.safe_load((folder / "contribution.yaml").read_text())
    cases = json.loads((folder / header.get("tests", "tests.json")).read_text())["test_cases"]
    assert cases
    rows = {
        (r["id"], r["variant"], r["na_text"]): r
        for name in header["data"]
        for r in map(json.loads, (folder / name).read_text().splitlines())
    }
    for case in cases:
        out = case["output"]
        assert rows[(out["id"], out["variant"], out["na_text"])] == out
    if "builder" in header.get("parameters", {}):
        produced = rebuild(
            [c["input"] for c in cases], header["parameters"], [c["output"] for c in cases]
        )
        assert produced == [c["output"] for c in cases]
