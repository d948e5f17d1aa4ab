"""Input a build cannot honestly use stops it with one line before anything reaches `out`:
a `--sample` larger than the items a split has to sample from (the card said "a seeded
sample of 100000" over 1,531 items), and a split whose every item is excluded (each config
was a table of 0 rows, which `load_dataset` cannot read). Real MMLU rows, copied and edited."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safety.safety_helpers import Run, copy_source, nabench


def _one_error(run: Run, out: Path) -> str:
    assert run.code == 2, (run.code, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and len(run.errors) == 1, run.stderr
    assert not out.exists()
    return run.errors[0]


@pytest.mark.parametrize("recipe", ["mmlu-na", "mmlu-artifacts"])
def test_a_sample_larger_than_the_split_is_refused(
    recipe: str, mmlu_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["build", recipe, "--source", str(mmlu_dir), "--split", "validation", "--quiet"]
    line = _one_error(
        nabench(*args, "--sample", "100000", "--labels", "none", "--out", str(out)), out
    )
    found = re.search(r"--sample 100000 is more than the (\d+) items of split validation", line)
    assert found, line
    rows = pq.read_metadata(next((mmlu_dir / "all").glob("validation-*.parquet"))).num_rows
    assert 0 < int(found.group(1)) <= rows  # the audited items, at most the split's rows


def _blank_questions(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("question")
    return table.set_column(i, "question", pa.array([""] * table.num_rows))


def _blank_first_choices(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("choices")
    choices = [["", *c[1:]] for c in table.column("choices").to_pylist()]
    return table.set_column(i, "choices", pa.array(choices, table.schema.field(i).type))


# An artifact prompt needs no question (choices-only), so its audit keeps a blank one.
@pytest.mark.parametrize(
    ("recipe", "edit", "reason"),
    [
        ("mmlu-na", _blank_questions, "missing_question"),
        ("mmlu-artifacts", _blank_first_choices, "empty_choice"),
    ],
)
def test_a_split_with_no_usable_item_stops_the_build(
    recipe: str, edit: Callable[[pa.Table], pa.Table], reason: str, mmlu_dir: Path, tmp_path: Path
) -> None:
    source = copy_source(mmlu_dir, tmp_path / "src", edit)
    out = tmp_path / "out"
    args = ["build", recipe, "--source", str(source), "--split", "validation", "--limit", "5"]
    line = _one_error(nabench(*args, "--labels", "none", "--quiet", "--out", str(out)), out)
    assert "split validation has no usable item: all 5 were excluded" in line
    assert f"({reason} 5)" in line


def test_a_split_with_usable_items_still_builds(mmlu_dir: Path, tmp_path: Path) -> None:
    """The control: blanking one of five questions quarantines that one item, nothing more."""

    def blank_first(table: pa.Table) -> pa.Table:
        questions = table.column("question").to_pylist()
        i = table.schema.get_field_index("question")
        return table.set_column(i, "question", pa.array(["", *questions[1:]]))

    source = copy_source(mmlu_dir, tmp_path / "src", blank_first)
    out = tmp_path / "out"
    args = ["build", "mmlu-na", "--source", str(source), "--split", "validation"]
    run = nabench(*args, "--limit", "5", "--labels", "none", "--quiet", "--out", str(out))
    assert run.code == 0, run.stderr
    excluded = pq.read_table(next(out.glob("excluded/validation-*.parquet")))
    assert excluded.column("reason").to_pylist() == ["missing_question"]
    original = pq.read_table(next(out.glob("original/validation-*.parquet")))
    assert original.num_rows == 4
