"""Loading CSV/TSV/XLSX/parquet tables into canonical columns, mappings and bad input."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nabench.core.errors import NabenchError
from nabench.selfknow import (
    LINE_OF_DUTY_COLUMNS,
    SelfKnowledgeCounts,
    load_selfknow_table,
    parse_column_mapping,
    selfknow_metrics,
)

OTHER = pd.DataFrame(
    {
        "gen": ["Feasible", "Infeasible", "Infeasible", "Feasible"],
        "gen why": ["", "Missing Context", "Malicious Intent", None],
        "cls": ["Feasible", "Infeasible", "Feasible", "Infeasible"],
        "cls why": [None, "Missing Context", "", "Vague/Open-Ended"],
        "extra": [1, 2, 3, 4],
    }
)
MAPPING = (
    "generated_class=gen,generated_reason=gen why,classified_class=cls,classified_reason=cls why"
)
EXPECTED = SelfKnowledgeCounts(ff=1, fr=1, rf=1, rr=1)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    suffix = path.suffix
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == ".xlsx":
        frame.to_excel(path, index=False, engine="openpyxl")
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".xlsx", ".parquet"])
def test_formats_with_mapping(tmp_path: Path, suffix: str) -> None:
    path = _write(OTHER, tmp_path / f"results{suffix}")
    table = load_selfknow_table(path, parse_column_mapping(MAPPING))
    assert list(table.columns) == [
        "generated_class",
        "generated_reason",
        "classified_class",
        "classified_reason",
    ]
    assert table["classified_reason"].tolist() == ["", "Missing Context", "", "Vague/Open-Ended"]
    assert selfknow_metrics(table).counts == EXPECTED


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet"])
def test_line_of_duty_layout_detected_in_every_format(tmp_path: Path, suffix: str) -> None:
    renamed = OTHER.rename(
        columns={
            "gen": LINE_OF_DUTY_COLUMNS["generated_class"],
            "gen why": LINE_OF_DUTY_COLUMNS["generated_reason"],
            "cls": LINE_OF_DUTY_COLUMNS["classified_class"],
            "cls why": LINE_OF_DUTY_COLUMNS["classified_reason"],
        }
    )
    table = load_selfknow_table(_write(renamed, tmp_path / f"lod{suffix}"))
    assert selfknow_metrics(table).counts == EXPECTED


def test_layout_detected_ignoring_case_and_spacing(tmp_path: Path) -> None:
    renamed = OTHER.rename(
        columns={
            "gen": "task category  (generation)",
            "gen why": "REASON FOR INCAPACITY (GENERATION)",
            "cls": "Task Category(Classification)",
            "cls why": "reason_for_incapacity_classification",
        }
    )
    table = load_selfknow_table(_write(renamed, tmp_path / "x.csv"))
    assert selfknow_metrics(table).counts == EXPECTED


def test_canonical_names_need_no_mapping(tmp_path: Path) -> None:
    canonical = OTHER.rename(
        columns={
            "gen": "generated_class",
            "gen why": "generated_reason",
            "cls": "classified_class",
            "cls why": "classified_reason",
        }
    )
    table = load_selfknow_table(_write(canonical, tmp_path / "c.csv"))
    assert selfknow_metrics(table).counts == EXPECTED


def test_mapping_overrides_detection(tmp_path: Path) -> None:
    frame = OTHER.rename(columns={"gen": "generated_class", "cls": "classified_class"})
    frame["generated_reason"] = "ignored"
    frame["classified_reason"] = "ignored"
    path = _write(frame, tmp_path / "o.csv")
    table = load_selfknow_table(
        path, parse_column_mapping(["generated_reason=gen why", "classified_reason=cls why"])
    )
    assert selfknow_metrics(table).counts == EXPECTED


def test_na_like_text_is_kept_as_text(tmp_path: Path) -> None:
    path = tmp_path / "na.csv"
    path.write_text(
        "generated_class,generated_reason,classified_class,classified_reason\n"
        "Infeasible,NA,Infeasible,N/A\n",
        encoding="utf-8",
    )
    table = load_selfknow_table(path)
    assert table.loc[0, "generated_reason"] == "NA"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "generated_class=A , classified_class = B C",
            {"generated_class": "A", "classified_class": "B C"},
        ),
        (["generated_type=T", "id=key"], {"generated_type": "T", "id": "key"}),
        ("", {}),
        (None, {}),
        ("task=Q=uestion", {"task": "Q=uestion"}),
    ],
)
def test_parse_column_mapping(spec: str | list[str] | None, expected: dict[str, str]) -> None:
    assert parse_column_mapping(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("generated_class", "bad column mapping"),
        ("=X", "bad column mapping"),
        ("generated_class=", "bad column mapping"),
        ("gen_class=X", "unknown canonical column 'gen_class'"),
    ],
)
def test_parse_column_mapping_errors(spec: str, message: str) -> None:
    with pytest.raises(NabenchError, match=message):
        parse_column_mapping(spec)


def _one_line_error(path: Path, columns: dict[str, str] | None = None) -> str:
    with pytest.raises(NabenchError) as info:
        load_selfknow_table(path, columns)
    message = str(info.value)
    assert "\n" not in message and message
    return message


def test_missing_required_column(tmp_path: Path) -> None:
    path = _write(OTHER.rename(columns={"gen": "generated_class"}), tmp_path / "m.csv")
    message = _one_line_error(path)
    assert "missing column(s) generated_reason, classified_class, classified_reason" in message
    assert "--columns" in message and str(path) in message


def test_mapped_column_absent(tmp_path: Path) -> None:
    path = _write(OTHER, tmp_path / "m.csv")
    message = _one_line_error(path, {"generated_class": "nope"})
    assert "column 'nope' (for generated_class) not found" in message


def test_missing_file(tmp_path: Path) -> None:
    assert "no such file" in _one_line_error(tmp_path / "absent.csv")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}", encoding="utf-8")
    assert "unsupported file type '.json'" in _one_line_error(path)


def test_directory_is_not_a_table(tmp_path: Path) -> None:
    folder = tmp_path / "dir.csv"
    folder.mkdir()
    assert "cannot read" in _one_line_error(folder)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bad.xlsx", b"this is not a zip file"),
        ("bad2.xlsx", b"PK\x03\x04 truncated zip"),
        ("bad.parquet", b"PAR1 not really parquet"),
        ("empty.csv", b""),
        ("binary.csv", b"\xff\xfe\x00\x00\xff\xff\x00"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert _one_line_error(path).startswith(f"cannot read {path}")
