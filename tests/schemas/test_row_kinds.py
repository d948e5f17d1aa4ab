"""One definition per row kind: the pydantic model, the derived Arrow schema and the derived
pandera schema agree on good and bad rows, and real builds pass `check_table`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import annotated_types as at
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from property_settings import COSTLY
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from nabench.cli import main as nabench_main
from nabench.schemas import (
    ROW_KINDS,
    TableSchemaError,
    arrow_schema,
    check_table,
    row_model,
    table_violations,
)
from nabench.schemas.derive import field_type, is_str_list
from nabench.schemas.export import SHIPPED, json_schemas

TEXT = st.text(alphabet="abcXYZ 01_/.-\n", max_size=12)


def _bound(info: FieldInfo, kind: type) -> Any:
    return next((m for m in info.metadata if isinstance(m, kind)), None)


def _pattern(info: FieldInfo) -> str | None:
    return next((m.pattern for m in info.metadata if getattr(m, "pattern", None)), None)


def _good(info: FieldInfo) -> st.SearchStrategy[Any]:
    ft = field_type(info.annotation)
    lo = _bound(info, at.MinLen)
    hi = _bound(info, at.MaxLen)
    if ft.base is list:
        return st.lists(TEXT, min_size=lo.min_length if lo else 0, max_size=5)
    if ft.base is str:
        if _pattern(info):
            return st.from_regex(r"[a-z0-9_]{1,4}(/[A-Za-z0-9_.\-]{1,4}){1,3}", fullmatch=True)
        size = (lo.min_length if lo else 0, hi.max_length if hi else 12)
        return st.text(alphabet="abc", min_size=size[0], max_size=size[1])
    if ft.base is int:
        ge = _bound(info, at.Ge)
        return st.integers(min_value=ge.ge if ge else -(2**40), max_value=2**40)
    if ft.base is bool:
        return st.booleans()
    return st.floats(allow_nan=False, allow_infinity=False)


def _bad(info: FieldInfo) -> st.SearchStrategy[Any] | None:
    """Values of the right Arrow type that break the field (None where nothing can)."""
    ft = field_type(info.annotation)
    options: list[st.SearchStrategy[Any]] = [] if ft.nullable else [st.none()]
    lo = _bound(info, at.MinLen)
    if ft.base is list and lo and lo.min_length > 0:
        options.append(st.lists(TEXT, max_size=lo.min_length - 1))
    if ft.base is str and _pattern(info):
        options.append(st.sampled_from(["X", "Mmlu/a", "mmlu", "mmlu//x", "a b/c"]))
    if ft.base is str and lo and lo.min_length > 0:
        options.append(st.text(alphabet="abc", max_size=lo.min_length - 1))
    ge = _bound(info, at.Ge)
    if ft.base is int and ge:
        options.append(st.integers(min_value=-(2**40), max_value=ge.ge - 1))
    return st.one_of(options) if options else None


@st.composite
def rows(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """A row whose every field is good, or (drawn per field) bad."""
    row: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        good = _good(info)
        if field_type(info.annotation).nullable:
            good = st.one_of(st.none(), good)
        bad = _bad(info)
        row[name] = draw(good if bad is None or draw(st.booleans()) else bad)
    # Cross-field rules of the NA items are whole-table invariants (validate.invariants):
    # keep gold indices in range so both sides judge the same per-row properties.
    for answer, choices in (("answer", "choices"), ("original_answer", "original_choices")):
        value, options = row.get(answer), row.get(choices)
        if isinstance(value, int) and value >= 0 and isinstance(options, list) and options:
            row[answer] = value % len(options)
    return row


def _model_ok(model: type[BaseModel], row: dict[str, Any]) -> bool:
    try:
        model.model_validate(row, strict=True)
    except ValidationError:
        return False
    return True


@st.composite
def batches(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A kind and up to 25 of its rows; unique columns made distinct (a shared suffix that
    keeps good ids good), so each row is judged on its own."""
    kind = draw(st.sampled_from(list(ROW_KINDS)))
    model = row_model(kind)
    batch = draw(st.lists(rows(model), min_size=1, max_size=25))
    for name in getattr(model, "unique", ()):
        for i, row in enumerate(batch):
            if isinstance(row[name], str):
                row[name] = f"{row[name]}/{i}"
    return kind, batch


# pandera costs ~0.1 s a call whatever the rows: batches of up to 25 rows (thousands of
# rows over all ten kinds), not single rows.
@COSTLY
@given(batches())
def test_model_arrow_and_pandera_agree(batch: tuple[str, list[dict[str, Any]]]) -> None:
    kind, rows_ = batch
    model = row_model(kind)
    expected = {i for i, row in enumerate(rows_) if not _model_ok(model, row)}
    table = pa.Table.from_pylist(rows_, schema=arrow_schema(kind))
    violations = table_violations(kind, table, "t")
    assert {v.row for v in violations} == expected, (kind, violations)


def test_arrow_schema_follows_the_model_field_order() -> None:
    for kind, model in ROW_KINDS.items():
        assert arrow_schema(kind).names == list(model.model_fields), kind


def test_label_rule_is_checked_on_both_sides() -> None:
    row = {
        "id": "x",
        "na_applicable": True,
        "rule": None,
        "rationale": None,
        "model": "m",
        "backend": "b",
        "guideline_version": "1.0.0",
        "prompt_sha256": "0" * 64,
        "raw_output": "",
        "valid": False,  # invalid yet carrying a value
        "attempts": 1,
    }
    with pytest.raises(ValidationError, match="na_applicable = null"):
        row_model("labels").model_validate(row)
    table = pa.Table.from_pylist([row], schema=arrow_schema("labels"))
    found = table_violations("labels", table, "t")
    assert found and {(v.row, v.message.split(" failed")[0]) for v in found} == {
        (0, "invalid labels must have na_applicable = null")
    }
    row["na_applicable"] = None
    assert table_violations("labels", pa.Table.from_pylist([row], schema=table.schema), "t") == []


def test_str_list_check_is_a_real_check() -> None:
    check = is_str_list(2)
    assert check(["a", "b"]) and check(("a", "b", "c"))
    assert not check(["a"]) and not check("ab") and not check(["a", 1]) and not check({"a": 1})
    assert not check(b"ab") and not check(None)


def test_check_table_raises_one_line_on_a_wrong_table() -> None:
    table = pa.table({"id": ["mmlu/x/0"], "source": ["mmlu"]})
    with pytest.raises(TableSchemaError) as err:
        check_table("item", table, "original/test.parquet")
    assert "\n" not in str(err.value) and "schema:columns" in str(err.value)
    wrong_type = pa.Table.from_pylist(
        [
            {
                "id": "mmlu/a/1",
                "source": "m",
                "subject": None,
                "question": "q",
                "choices": ["a", "b"],
                "answer": 0,
            }
        ],
        schema=arrow_schema("item"),
    ).cast(arrow_schema("item").set(5, pa.field("answer", pa.int32())))
    assert [v.rule for v in table_violations("item", wrong_type, "t")] == ["schema:answer"]


def test_shipped_json_schemas_equal_the_models() -> None:
    shipped = {p.name.removesuffix(".schema.json") for p in SHIPPED.glob("*.schema.json")}
    assert shipped == set(json_schemas())
    for name, schema in json_schemas().items():
        path = SHIPPED / f"{name}.schema.json"
        assert json.loads(path.read_text()) == schema, f"run: nabench schema export --out {SHIPPED}"


def test_a_real_build_passes_check_table(tmp_path: Path, mmlu_dir: Path) -> None:
    out = tmp_path / "mmlu-na"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "60"]
    result = CliRunner().invoke(nabench_main, [*args, "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    kinds = {"excluded": "excluded_item", "labels": "labels"}
    files = sorted(out.rglob("*.parquet"))
    assert len(files) >= 4
    for path in files:
        kind = kinds.get(path.parent.name, "perturbed_item")
        table = pq.read_table(path)
        assert table.schema.equals(arrow_schema(kind), check_metadata=False), path
        check_table(kind, table, str(path))
