"""Labels files (`--labels PATH`, `nabench agree`): `na_applicable` is read as booleans only.

Parquet / JSON booleans, CSV `true` / `false` in any case, and an empty cell or null for no
label; anything else (0/1, yes/no, floats, text in a parquet file) is one error line naming
the file, the column and a value, never a boolean guessed from it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.label.files import read_labels

IDS = [f"mmlu/all/test/{i:05d}" for i in range(12)]


def _csv(path: Path, values: list[str]) -> Path:
    path.write_text(
        "id,na_applicable\n"
        + "".join(f"{i},{v}\n" for i, v in zip(IDS[: len(values)], values, strict=True))
    )
    return path


def _parquet(path: Path, values: pa.Array) -> Path:
    pq.write_table(pa.table({"id": IDS[: len(values)], "na_applicable": values}), path)
    return path


def _jsonl(path: Path, values: list[object]) -> Path:
    rows = [{"id": i, "na_applicable": v} for i, v in zip(IDS[: len(values)], values, strict=True)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _error_line(args: list[str]) -> tuple[int, list[str]]:
    run = CliRunner().invoke(main, args)
    assert "Traceback" not in run.output and "internal error" not in run.output, run.output
    return run.exit_code, [ln for ln in run.output.splitlines() if ln.startswith("error:")]


def test_documented_booleans_are_read(tmp_path: Path) -> None:
    csv = _csv(tmp_path / "l.csv", ["true", "FALSE", "True", " false ", ""] + ["true"] * 7)
    assert read_labels(csv)["na_applicable"].tolist()[:5] == [True, False, True, False, None]
    parquet = _parquet(tmp_path / "l.parquet", pa.array([True, False, None]))
    assert read_labels(parquet)["na_applicable"].tolist() == [True, False, None]
    nullable = tmp_path / "n.parquet"  # pandas' nullable booleans
    pd.DataFrame({"id": IDS[:2], "na_applicable": pd.array([True, None], "boolean")}).to_parquet(
        nullable
    )
    assert read_labels(nullable)["na_applicable"].tolist() == [True, None]
    jsonl = _jsonl(tmp_path / "l.jsonl", [True, False, None])
    assert read_labels(jsonl)["na_applicable"].tolist() == [True, False, None]


@pytest.mark.parametrize(
    ("name", "write", "shown"),
    [
        ("ints.csv", lambda p: _csv(p, ["1", "0"] * 6), "'1'"),
        ("words.csv", lambda p: _csv(p, ["true", "yes", "t", "no"] * 3), "'yes'"),
        ("ints.parquet", lambda p: _parquet(p, pa.array([1, 0, 1], pa.int64())), "1"),
        ("floats.parquet", lambda p: _parquet(p, pa.array([1.0, 0.0, None])), "1.0"),
        ("text.parquet", lambda p: _parquet(p, pa.array(["true", "false"])), "'true'"),
        ("ints.jsonl", lambda p: _jsonl(p, [1, 0, None]), "1"),
        ("text.jsonl", lambda p: _jsonl(p, [True, "false"]), "'false'"),
    ],
)
def test_non_boolean_labels_are_one_error_line(
    tmp_path: Path, name: str, write: Callable[[Path], Path], shown: str
) -> None:
    human = _csv(tmp_path / "human.csv", ["true", "false"] * 6)
    bad = write(tmp_path / name)
    code, errors = _error_line(["agree", str(bad), str(human)])
    assert code == 2
    assert len(errors) == 1, errors
    assert str(bad) in errors[0] and "na_applicable" in errors[0] and shown in errors[0]
    assert "true" in errors[0] and "false" in errors[0]  # what is expected


def test_a_float_column_says_what_was_found_not_a_labeler_hint(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """A float column read as all-invalid labels sent the user to the labeler model's raw
    output; the file's column is what is wrong."""
    labels = _parquet(tmp_path / "l.parquet", pa.array([1.0] * 12))
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--limit", "12"]
    code, errors = _error_line([*args, "--labels", str(labels), "--out", str(tmp_path / "o")])
    assert code != 0 and len(errors) == 1, errors
    line = errors[0]
    assert str(labels) in line and "na_applicable" in line and "1.0" in line, line
    assert "float" in line or "number" in line, line
    assert "labeler" not in line and "raw output" not in line, line
    assert not (tmp_path / "o").exists()


def test_csv_ids_padded_with_spaces_are_compared(tmp_path: Path) -> None:
    """A hand-edited CSV's ` mmlu/all/test/00001 ` is that item (CSV cells are trimmed, as
    its booleans are), not an id counted as `not compared`."""
    llm = _csv(tmp_path / "llm.csv", ["true", "false"] * 6)
    human = tmp_path / "human.csv"
    human.write_text("id,na_applicable\n" + "".join(f" {i} ,true\n" for i in IDS[::2]))
    run = CliRunner().invoke(main, ["agree", str(llm), str(human), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.output)
    assert result["n"] == len(IDS[::2]) and result["excluded"]["only_in_human"] == 0, result


def test_a_jsonl_labels_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text(_jsonl(tmp_path / "plain.jsonl", [True, False]).read_text(), "utf-8-sig")
    assert read_labels(path)["na_applicable"].tolist() == [True, False]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("blank.csv", "id,na_applicable\nmmlu/all/test/00000,true\n  ,false\n"),
        ("null.jsonl", '{"id": "mmlu/all/test/00000", "na_applicable": true}\n'
         '{"id": null, "na_applicable": false}\n'),
        ("number.jsonl", '{"id": "mmlu/all/test/00000", "na_applicable": true}\n'
         '{"id": 7, "na_applicable": false}\n'),
    ],
)  # fmt: skip
def test_a_label_without_a_text_id_is_refused_naming_its_row(
    tmp_path: Path, name: str, text: str
) -> None:
    """A label whose id is blank, null or a number can match no item: it was counted as
    `only_in_human` and the agreement printed with exit 0, the row silently unused."""
    (tmp_path / name).write_text(text)
    llm = _csv(tmp_path / "llm.csv", ["true", "false"])
    code, errors = _error_line(["agree", str(llm), str(tmp_path / name)])
    assert code == 2 and len(errors) == 1, errors
    assert name in errors[0] and "row 2" in errors[0] and "id" in errors[0], errors


def test_a_ragged_csv_is_one_error_line(tmp_path: Path) -> None:
    """pandas' `Expected 3 fields in line 3, saw 4` ends in a newline: the error took two."""
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("id,na_applicable\nmmlu/all/test/00000,true\nmmlu/all/test/00001,false,1\n")
    run = CliRunner().invoke(main, ["agree", str(ragged), str(ragged)])
    assert run.exit_code == 2 and "line 3" in run.output, run.output
    assert len(run.output.strip().splitlines()) == 1, run.output
