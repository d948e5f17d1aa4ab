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

from nabench.core.errors import NabenchError
from nabench.pipelines import na_train
from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.sources import get_source


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


def test_a_sample_of_a_split_with_nothing_usable_says_why(mmlu_dir: Path, tmp_path: Path) -> None:
    """Nothing to sample from: the reasons, not "use a smaller --sample"."""
    source = copy_source(mmlu_dir, tmp_path / "src", _blank_questions)
    out = tmp_path / "out"
    args = ["build", "mmlu-na", "--source", str(source), "--split", "dev", "--sample", "5"]
    line = _one_error(nabench(*args, "--labels", "none", "--quiet", "--out", str(out)), out)
    rows = pq.read_metadata(next((mmlu_dir / "all").glob("dev-*.parquet"))).num_rows
    assert f"split dev has no usable item: all {rows} were excluded (" in line
    assert "missing_question" in line and "--sample" not in line


def test_a_recorded_oversized_sample_still_validates_against_its_source(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """Before this check, `--sample 100000` built every item; `validate --source` rebuilds such
    a build as it was made instead of refusing it with build advice."""
    out = tmp_path / "old"
    options = BuildOptions(
        source=str(mmlu_dir), out=out, splits=["dev"], sample=100000, labels="none",
        progress=False, rebuild=True,
    )  # fmt: skip
    run_recipe(load_recipe("mmlu-na", []), options)
    run = nabench("validate", str(out), "--source", str(mmlu_dir))
    assert run.code == 0, run.stdout + run.stderr


def _labels(path: Path, splits: dict[str, bool]) -> Path:
    rows = [f"mmlu/all/{s}/{i:05d},{str(v).lower()}" for s, v in splits.items() for i in range(5)]
    path.write_text("id,na_applicable\n" + "\n".join(rows) + "\n")
    return path


def _prepare(mmlu_dir: Path, labels: Path) -> na_train.Prepared:
    recipe = load_recipe("mmlu-na-train", [])
    options = BuildOptions(
        source=str(mmlu_dir), splits=["validation", "dev"], limit=5, labels=str(labels),
        progress=False,
    )  # fmt: skip
    source = get_source(recipe.source.dataset)
    steps = na_train.preparing(
        recipe, options, source, na_train.eval_index(source, recipe, options), 0
    )
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def test_na_train_pools_its_splits_so_one_empty_split_is_no_error(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """na-train pools its splits into one `train` split: a split without a usable item is no
    empty config; a pool without one is."""
    both = _labels(tmp_path / "one.csv", {"validation": True, "dev": False})
    prepared = _prepare(mmlu_dir, both)
    assert {t.num_rows for t in prepared.variants} == {5}  # the validation items
    reasons = prepared.excluded.column("reason").to_pylist()
    assert reasons.count("not_na_applicable") == 5
    neither = _labels(tmp_path / "none.csv", {"validation": False, "dev": False})
    with pytest.raises(NabenchError, match=r"split validation \+ dev has no usable item: all 10"):
        _prepare(mmlu_dir, neither)


def test_a_rebuild_by_another_audit_version_says_so_first(mmlu_dir: Path, tmp_path: Path) -> None:
    """Option patterns version 6 changed what some exclusions are called (`has_inserted_text`):
    a build of version 5 that differs from its rebuild is reported with the versions first,
    not only as rows that differ (what a forgery looks like)."""
    from nabench.pipelines.rebuild import _audit_version_note, recorded_manifest

    out = tmp_path / "b"
    opts = BuildOptions(source=str(mmlu_dir), out=out, limit=5, labels="none", progress=False)
    run_recipe(load_recipe("mmlu-na", []), opts)
    now = recorded_manifest(out)
    assert now.audit_patterns is not None and now.audit_patterns["version"] == "6"
    assert _audit_version_note(now, now) == []
    old = now.model_copy(update={"audit_patterns": {**now.audit_patterns, "version": "5"}})
    (note,) = _audit_version_note(old, now)
    assert note.rule == "audit_patterns"
    assert "built with audit patterns version 5, this nabench audits with version 6" in str(note)
