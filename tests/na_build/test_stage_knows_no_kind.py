"""stage knows no build kind: what a tree holds beyond its tables (lm-eval tasks, what the
build is for) is what the kind's pipeline asks for, not a branch on build.json's `kind`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from nabench.schemas.manifest import Manifest
from nabench.stage.croissant import CardFacts
from nabench.stage.hub_layout import StagedTable, StagingArea

ROWS = {
    "id": ["mmlu/all/test/00001"],
    "question": ["Q?"],
    "choices": [["a", "b", "c", "d"]],
    "answer": [0],
}
NA_LIKE = {"kind": "na", "recipe": {"name": "t", "version": "1.0.0"}}


def _stage(out: Path, facts: CardFacts | None = None, *, lm_eval: bool = False) -> None:
    with StagingArea(out) as area:
        area.add(StagedTable("na_keyed", "test", pa.table(ROWS)))
        area.commit(
            lambda _c, _i: "card\n", Manifest.model_validate(NA_LIKE), facts, lm_eval=lm_eval
        )


def test_lm_eval_tasks_are_written_when_the_pipeline_asks_not_by_kind(tmp_path: Path) -> None:
    _stage(tmp_path / "plain")
    plain = json.loads((tmp_path / "plain" / "build.json").read_text())
    assert not (tmp_path / "plain" / "lm_eval").exists() and "lm_eval" not in plain
    _stage(tmp_path / "tasks", lm_eval=True)
    tasks = json.loads((tmp_path / "tasks" / "build.json").read_text())
    assert (tmp_path / "tasks" / "lm_eval").is_dir()
    assert list(tasks["lm_eval"]["configs"]) == ["na_keyed"]


def test_use_cases_come_from_the_facts_the_pipeline_gives(tmp_path: Path) -> None:
    _stage(tmp_path / "none")
    none = json.loads((tmp_path / "none" / "croissant.json").read_text())
    assert "rai:dataUseCases" not in none
    _stage(tmp_path / "given", CardFacts(uses=("Probing one thing.",)))
    given = json.loads((tmp_path / "given" / "croissant.json").read_text())
    assert given["rai:dataUseCases"] in ("Probing one thing.", ["Probing one thing."])
