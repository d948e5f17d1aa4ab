"""Bad inputs fail before anything is written: one error line, a non-zero exit, and the
previous build byte for byte as it was (issue 08, "Inputs checked before anything is
written")."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safety_helpers import (
    build_args,
    copy_source,
    hidden,
    http_server,
    llm_recipe,
    nabench,
    tree_bytes,
    write_recipe,
)

from nabench.core.errors import SourceError
from nabench.llm import free_port
from nabench.sources import read_split


@pytest.fixture
def out(plain_build: Path, tmp_path: Path) -> Path:
    """A copy of a finished build: what each bad run must leave exactly as it is."""
    target = tmp_path / "out"
    shutil.copytree(plain_build, target)
    return target


def _refused(run_args: tuple[str, ...], out: Path, expect: str) -> str:
    before = tree_bytes(out)
    run = nabench(*run_args)
    assert run.code != 0, run.stdout
    assert len(run.errors) == 1, run.stderr
    assert expect in run.errors[0], run.errors[0]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert tree_bytes(out) == before
    assert hidden(out.parent) == []  # no temp folder, no lock left
    return run.errors[0]


def test_source_without_question_column_is_one_line_naming_it(
    mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    # The card still declares `question`, so `datasets` would null-fill it (13,369 rows with
    # a null question and "violations: 0" before this check).
    source = copy_source(mmlu_dir, tmp_path / "noq", lambda t: t.drop_columns(["question"]))
    line = _refused(
        ("build", *build_args(source, out, "--labels", "none")[1:], "mmlu-na"), out, "'question'"
    )
    assert str(source) in line


def test_source_with_choices_of_wrong_type_names_the_column(
    mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    def numbers(table: pa.Table) -> pa.Table:
        idx = table.schema.get_field_index("choices")
        return table.set_column(idx, "choices", pa.array(range(table.num_rows), pa.int64()))

    source = tmp_path / "typed"
    (source / "all").mkdir(parents=True)
    for path in sorted((mmlu_dir / "all").glob("*.parquet")):  # no card: the files' own types
        pq.write_table(numbers(pq.read_table(path)), source / "all" / path.name)
    _refused(
        (
            "build",
            *build_args(source / "all" / "test-00000-of-00001.parquet", out)[1:],
            "--labels",
            "none",
            "mmlu-na",
        ),
        out,
        "'choices'",
    )


def test_numeric_choices_behind_a_card_are_refused(
    mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    """Choices stored as numbers [1, 2, 3, 4] under a card declaring text: `datasets` cast
    them to the card's features and every item was built with the options '1'..'4'."""

    def numbers(table: pa.Table) -> pa.Table:
        idx = table.schema.get_field_index("choices")
        ints = pa.array([[1, 2, 3, 4]] * table.num_rows, pa.list_(pa.int64()))
        return table.set_column(idx, "choices", ints)

    source = copy_source(mmlu_dir, tmp_path / "ints", numbers)
    line = _refused(
        ("build", *build_args(source, out, "--labels", "none")[1:], "mmlu-na"), out, "'choices'"
    )
    assert "test-00000-of-00001.parquet" in line and "int64" in line, line


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_numeric_choices_in_json_behind_a_card_are_refused(
    suffix: str, mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    """The same source as JSON Lines, or as JSON arrays of records (the card's data files
    renamed): `datasets` cast the numbers to the card's text features just the same (the
    arrays were not checked at all)."""
    source = tmp_path / "ints-json"
    (source / "all").mkdir(parents=True)
    card = (mmlu_dir / "README.md").read_text(encoding="utf-8")
    (source / "README.md").write_text(card.replace(".parquet", suffix), encoding="utf-8")
    for path in sorted((mmlu_dir / "all").glob("*.parquet")):
        rows = [{**r, "choices": [1, 2, 3, 4]} for r in pq.read_table(path).to_pylist()]
        lines = [json.dumps(r) for r in rows]
        text = "\n".join(lines) + "\n" if suffix == ".jsonl" else json.dumps(rows)
        (source / "all" / f"{path.stem}{suffix}").write_text(text)
    line = _refused(
        ("build", *build_args(source, out, "--labels", "none")[1:], "mmlu-na"), out, "'choices'"
    )
    assert f"test-00000-of-00001{suffix}" in line and "int64" in line, line


def _json_array_source(
    mmlu_dir: Path, dest: Path, edit: Callable[[int, dict], dict], suffix: str = ".json"
) -> Path:
    """The MMLU source as JSON arrays of records (`.jsonl`: JSON Lines), `edit(i, record)`
    applied to each."""
    (dest / "all").mkdir(parents=True)
    card = (mmlu_dir / "README.md").read_text(encoding="utf-8")
    (dest / "README.md").write_text(card.replace(".parquet", suffix), encoding="utf-8")
    for path in sorted((mmlu_dir / "all").glob("*.parquet")):
        rows = [edit(i, r) for i, r in enumerate(pq.read_table(path).to_pylist())]
        text = "".join(json.dumps(r) + "\n" for r in rows) if suffix == ".jsonl" else None
        (dest / "all" / f"{path.stem}{suffix}").write_text(text or json.dumps(rows))
    return dest


def test_a_json_array_column_of_two_types_is_refused_naming_it(
    mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    """One record's answer as text ("2") among integers: refused naming the column (the
    message named none, or the first record's value)."""

    def text_answer(i: int, r: dict) -> dict:
        return {**r, "answer": str(r["answer"]) if i == 3 else r["answer"]}

    source = _json_array_source(mmlu_dir, tmp_path / "mixed", text_answer)
    line = _refused(
        ("build", *build_args(source, out, "--labels", "none")[1:], "mmlu-na"), out, "'answer'"
    )
    assert "more than one type" in line, line


# Row 13,000 of MMLU test lies far past pyarrow's first JSON block (1 MiB, ~1,900 rows).
_LATE_VALUES = {"question": 12345, "choices": [1, 2, 3, 4], "answer": "2"}


@pytest.mark.parametrize("card", [True, False], ids=["behind-a-card", "one-file"])
@pytest.mark.parametrize("column", sorted(_LATE_VALUES))
def test_a_json_lines_column_changing_type_after_the_first_block_is_refused(
    mmlu_dir: Path, tmp_path: Path, out: Path, column: str, card: bool
) -> None:
    """Only the first block's types were checked: behind a card, one number among the
    questions made every question of the split its JSON text (`"Find the degree..."`, quotes
    included) and one numeric choices list quoted 13,550 items' options, built without a
    word; as one file the message was "found extension<arrow.json>"."""

    def late(i: int, r: dict) -> dict:
        return {**r, column: _LATE_VALUES[column]} if i == 13000 else r

    source = _json_array_source(mmlu_dir, tmp_path / "late", late, ".jsonl")
    test_file = source / "all" / "test-00000-of-00001.jsonl"
    location = source if card else test_file
    line = _refused(
        ("build", *build_args(location, out, "--labels", "none")[1:], "mmlu-na"), out, repr(column)
    )
    assert f"{test_file}: column {column!r} holds values of more than one type" in line, line


_NOTES_CARD = """---
dataset_info:
  features:
  - name: question
    dtype: string
  - name: choices
    sequence: string
  - name: answer
    dtype: int64
  - name: notes
    sequence: string
configs:
- config_name: default
  data_files:
  - split: test
    path: data/test.jsonl
---
"""


def test_numeric_choices_beside_a_list_after_a_null_start_are_refused(tmp_path: Path) -> None:
    """`notes` null in the first 20,000 rows and a list after: pyarrow refuses the whole
    file for that (not a type change), and its error switched the check off for every
    column, so the numeric choices were read as the card's text, '0'..'3', without a word."""
    (tmp_path / "data").mkdir()
    (tmp_path / "README.md").write_text(_NOTES_CARD, encoding="utf-8")
    rows = (
        {"question": f"q{i}", "choices": [i, i + 1, i + 2, i + 3], "answer": 0,
         "notes": None if i < 20000 else ["checked"]}
        for i in range(40000)
    )  # fmt: skip
    (tmp_path / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SourceError) as err:
        read_split(str(tmp_path), None, "test")
    message = str(err.value)
    assert "column 'choices' holds list<item: int64>" in message and "\n" not in message


def test_a_null_subject_is_refused(mmlu_dir: Path, tmp_path: Path, out: Path) -> None:
    """A null subject was built: the item sat under `(none)`, outside every MMLU category."""

    def no_subject(table: pa.Table) -> pa.Table:
        subjects = table.column("subject").to_pylist()
        subjects[1] = None
        idx = table.schema.get_field_index("subject")
        return table.set_column(idx, "subject", pa.array(subjects, pa.string()))

    source = copy_source(mmlu_dir, tmp_path / "nosubj", no_subject)
    _refused(
        ("build", *build_args(source, out, "--labels", "none")[1:], "mmlu-na"),
        out,
        "row mmlu/all/test/00001: 'subject' is null",
    )


def test_null_question_and_null_choice_are_quarantined_not_built(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    def holes(table: pa.Table) -> pa.Table:
        questions = table.column("question").to_pylist()
        choices = table.column("choices").to_pylist()
        questions[1] = None
        questions[3] = "   \t  "  # blank: no question to ask
        choices[2] = [choices[2][0], None, *choices[2][2:]]
        table = table.set_column(0, "question", pa.array(questions, pa.string()))
        idx = table.schema.get_field_index("choices")
        return table.set_column(idx, "choices", pa.array(choices, table.schema.field(idx).type))

    source = copy_source(mmlu_dir, tmp_path / "holes", holes)
    out = tmp_path / "b"
    run = nabench(*build_args(source, out, "--labels", "none"), "mmlu-na")
    assert run.code == 0, run.stderr
    excluded = pq.read_table(out / "excluded" / "test-00000-of-00001.parquet").to_pylist()
    reasons = {r["id"]: r["reason"] for r in excluded}
    assert reasons["mmlu/all/test/00001"] == "missing_question"
    assert reasons["mmlu/all/test/00002"] == "empty_choice"
    assert reasons["mmlu/all/test/00003"] == "missing_question"
    held = {"mmlu/all/test/00001", "mmlu/all/test/00002", "mmlu/all/test/00003"}
    for config in ("original", "na_keyed"):
        ids = pq.read_table(out / config / "test-00000-of-00001.parquet").column("id")
        assert not held & set(ids.to_pylist())
    assert nabench("validate", str(out)).code == 0


def test_labels_matching_no_id_refuse(mmlu_dir: Path, tmp_path: Path, out: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("id,na_applicable\narc_challenge/test/Mercury_1,true\n")
    _refused(
        ("build", *build_args(mmlu_dir, out, "--labels", str(labels))[1:], "mmlu-na"),
        out,
        "none of the 12 eligible item(s)",
    )


def test_dead_endpoint_fails_the_build(mmlu_dir: Path, tmp_path: Path, out: Path) -> None:
    port = free_port()  # nothing listens there
    recipe = write_recipe(tmp_path / "r.yaml", llm_recipe(f"http://127.0.0.1:{port}/v1"))
    cache = tmp_path / "cache.sqlite"
    line = _refused(
        ("build", *build_args(mmlu_dir, out, "--cache", str(cache))[1:], str(recipe)),
        out,
        "12 of 12 request(s) got no answer",
    )
    assert "Connection" in line


def _completion(content: str) -> dict[str, object]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "tiny",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def test_http_500_fails_the_build(mmlu_dir: Path, tmp_path: Path, out: Path) -> None:
    with http_server(lambda method, path, body: (500, {"error": {"message": "boom"}})) as url:
        recipe = write_recipe(tmp_path / "r.yaml", llm_recipe(f"{url}/v1"))
        line = _refused(
            (
                "build",
                *build_args(mmlu_dir, out, "--cache", str(tmp_path / "c.sqlite"))[1:],
                str(recipe),
            ),
            out,
            "got no answer",
        )
    assert "500" in line


def test_garbage_answers_refuse_instead_of_an_empty_build(
    mmlu_dir: Path, tmp_path: Path, out: Path
) -> None:
    def answer(method: str, path: str, body: bytes) -> tuple[int, dict[str, object]]:
        if path.endswith("/models"):
            return 200, {
                "object": "list",
                "data": [{"id": "tiny", "object": "model", "owned_by": "me"}],
            }
        return 200, _completion("<<garbage, not JSON>>")

    with http_server(answer) as url:
        recipe = write_recipe(tmp_path / "r.yaml", llm_recipe(f"{url}/v1"))
        _refused(
            (
                "build",
                *build_args(mmlu_dir, out, "--cache", str(tmp_path / "c.sqlite"))[1:],
                str(recipe),
            ),
            out,
            "all 12 label(s) of split test are invalid",
        )


def test_some_transport_errors_are_allowed_by_max_error_share(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    good = json.dumps({"na_applicable": True, "rule": "none", "rationale": "ok"})

    def answer(method: str, path: str, body: bytes) -> tuple[int, dict[str, object]]:
        if path.endswith("/models"):
            return 200, {
                "object": "list",
                "data": [{"id": "tiny", "object": "model", "owned_by": "me"}],
            }
        if b"sqrt(18)" in body:  # the question of item 00000: fails on every attempt
            return 500, {"error": {"message": "boom"}}
        return 200, _completion(good)

    with http_server(answer) as url:
        recipe = write_recipe(
            tmp_path / "r.yaml",
            llm_recipe(f"{url}/v1").replace(
                "concurrency: 2", "concurrency: 2\n    max_error_share: 0.5"
            ),
        )
        out = tmp_path / "b"
        run = nabench(
            *build_args(mmlu_dir, out, "--cache", str(tmp_path / "c.sqlite")), str(recipe)
        )
    assert run.code == 0, run.stderr
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["labels"]["mode"] == "llm"
    assert 0 < manifest["counts"]["na_keyed"]["test"] < 12
    excluded = pq.read_table(out / "excluded" / "test-00000-of-00001.parquet").to_pylist()
    assert {r["id"]: r["reason"] for r in excluded}["mmlu/all/test/00000"] == "invalid_label"
