"""Hostile inputs get a message that names the real cause: one `error:` line (or a
quarantine reason) saying what is wrong with the input, never a misleading one."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from safety_helpers import Run, build_args, copy_arc_source, nabench, write_recipe

ABCD = ["A", "B", "C", "D"]


def _one_error(run: Run) -> str:
    assert run.code != 0, run.stdout
    assert len(run.errors) == 1, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    return run.errors[0]


def _arc_with_key(arc_dir: Path, dest: Path, key: str | None) -> tuple[Path, str]:
    """A copy of ARC whose first test row labelled A-D has answerKey `key`; (folder, item id)."""
    edited: list[str] = []

    def edit(rows: list[dict[str, object]]) -> None:
        row = next(r for r in rows if r["choices"]["label"] == ABCD)  # type: ignore[index]
        row["answerKey"] = key
        edited.append(f"arc_challenge/test/{row['id']}")

    return copy_arc_source(arc_dir, dest, edit), edited[0]


@pytest.mark.parametrize(
    ("key", "expect"),
    [
        ("E", "answerKey 'E' is not one of its labels ['A', 'B', 'C', 'D']"),
        (None, "answerKey is missing (null)"),
        (
            " C",
            "answerKey ' C' is not one of its labels ['A', 'B', 'C', 'D'] "
            "(keys are matched exactly: it has surrounding whitespace)",
        ),
    ],
)
def test_arc_key_naming_no_label_is_refused_naming_the_key(
    arc_dir: Path, tmp_path: Path, key: str | None, expect: str
) -> None:
    """'E' on a 4-choice row and a null key said "answer None is out of range"; a key ' C'
    was stripped and built as 'C'. Keys are compared with the row's labels exactly."""
    source, item_id = _arc_with_key(arc_dir, tmp_path / "arc", key)
    out = tmp_path / "out"
    line = _one_error(nabench(*build_args(source, out, "--labels", "none"), "arc-na"))
    assert f"row {item_id}: {expect}" in line, line
    assert "out of range" not in line
    assert not out.exists()


def test_na_text_that_is_an_ordinary_option_is_quarantined_as_such(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """A custom NA text equal to an item's option ("True, True") quarantined the item as
    has_none_option, as if it held a None-of-the-above option."""
    recipe = write_recipe(
        tmp_path / "na.yaml",
        "name: custom-na\nversion: 1.0.0\nkind: na\nsource: {dataset: mmlu, splits: [test]}\n"
        "seed: 7\nvariants:\n  - kind: original\n  - kind: na_keyed\n"
        '    na_texts: [None of the above, "True, True"]\nlabels: {mode: none}\n',
    )
    out = tmp_path / "out"
    run = nabench(*build_args(mmlu_dir, out), str(recipe))
    assert run.code == 0, run.stderr
    excluded = pq.read_table(out / "excluded" / "test-00000-of-00001.parquet").to_pylist()
    held = [r for r in excluded if "True, True" in r["choices"]]
    assert held, "the first 12 MMLU test items hold 'True, True'"
    assert {(r["reason"], tuple(r["reasons"])) for r in held} == {
        ("has_inserted_text", ("has_inserted_text",))
    }
    assert "has_inserted_text=" in run.stdout + run.stderr
    assert nabench("validate", str(out)).code == 0


def test_repeated_source_ids_are_one_line_naming_the_id(arc_dir: Path, tmp_path: Path) -> None:
    """Two ids repeated in ARC's test split gave 25 `[schema:id] field_uniqueness` lines
    (one per row of every config), none saying the source repeats an id."""
    repeated: list[str] = []

    def edit(rows: list[dict[str, object]]) -> None:
        rows[5]["id"] = rows[9]["id"] = rows[3]["id"]
        rows[20]["id"] = rows[11]["id"]
        repeated.extend(f"arc_challenge/test/{rows[i]['id']}" for i in (3, 11))

    source = copy_arc_source(arc_dir, tmp_path / "arc", edit)
    out = tmp_path / "out"
    line = _one_error(nabench(*build_args(source, out, "--labels", "none"), "arc-na"))
    assert f"id {repeated[0]!r} is repeated (3 rows); 2 ids are repeated" in line, line
    assert "schema" not in line
    assert not out.exists()
