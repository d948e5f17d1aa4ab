"""scripts/compare_builds.py on two real tiny builds: equal content in other parquet bytes
is equal; one edited cell, a dropped row, a missing config and an extra column are not."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_builds.py"
NA_KEYED = "na_keyed/test-00000-of-00001.parquet"


def compare(old: Path, new: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(old), str(new)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("cmp") / "old"
    options = BuildOptions(source=str(mmlu_dir), out=out, limit=6, labels="none", progress=False)
    run_recipe(load_recipe("mmlu-na"), options)
    return out


def _rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path, compression="snappy")  # other bytes than the build's zstd


def test_same_rows_in_other_bytes_are_equal(tiny: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(tiny, new)
    _rewrite(new / NA_KEYED, pq.read_table(new / NA_KEYED))
    assert (new / NA_KEYED).read_bytes() != (tiny / NA_KEYED).read_bytes()
    result = compare(tiny, new)
    assert result.returncode == 0, result.stdout
    assert "na_keyed/test: equal (" in result.stdout
    assert "DIFFERENT" not in result.stdout


def test_one_edited_cell_is_reported_with_its_id_and_column(tiny: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(tiny, new)
    table = pq.read_table(new / NA_KEYED)
    questions = table.column("question").to_pylist()
    questions[3] += " (edited)"
    edited = table.set_column(
        table.schema.get_field_index("question"), "question", pa.array(questions)
    )
    _rewrite(new / NA_KEYED, edited)
    third_id = table.column("id")[3].as_py()
    result = compare(tiny, new)
    assert result.returncode == 1
    line = next(x for x in result.stdout.splitlines() if x.startswith("na_keyed/test:"))
    assert f"1 of {table.num_rows} rows differ" in line
    assert repr(third_id) in line and "'question'" in line
    assert "original/test: equal" in result.stdout


def test_missing_config_row_count_and_column_differ(tiny: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(tiny, new)
    shutil.rmtree(new / "na_distractor")
    original = new / "original" / "test-00000-of-00001.parquet"
    _rewrite(original, pq.read_table(original).slice(1))
    excluded = new / "excluded" / "test-00000-of-00001.parquet"
    table = pq.read_table(excluded)
    _rewrite(excluded, table.append_column("extra", pc.cast(pa.nulls(table.num_rows), pa.int8())))
    out = compare(tiny, new).stdout
    assert "na_distractor/test: DIFFERENT: missing in NEW" in out
    assert "original/test: DIFFERENT:" in out and "rows before" in out
    assert "excluded/test: DIFFERENT: column(s) on one side only: ['extra']" in out
