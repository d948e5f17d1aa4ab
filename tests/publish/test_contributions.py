"""`nabench validate` on contributed perturbations: the shipped example passes, each of a
dozen corruptions fails with a message naming file, row and rule."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.schemas.tables import PERTURBED_ARROW
from nabench.validate import validate_path
from nabench.validate.contributions import Limits, rebuild
from nabench.validate.contributions import main as contributions_main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contributions" / "example-na-distractor-none-of-these"
NAME = EXAMPLE.name
IDS = [json.loads(line)["id"] for line in (EXAMPLE / "rows.jsonl").read_text().splitlines()]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture()
def contrib(tmp_path: Path) -> Path:
    """A fresh copy of the example under <tmp>/contributions/."""
    root = tmp_path / "contributions"
    shutil.copytree(EXAMPLE, root / NAME)
    return root


@pytest.fixture()
def example_source(mmlu_dir: Path) -> dict[str, str]:
    """The example's rows are MMLU dev rows: ids are traced against the real data."""
    return {"mmlu": str(mmlu_dir)}


def messages(path: Path, **kw: Any) -> list[str]:
    return [str(v) for v in validate_path(path, **kw).violations]


def test_example_passes(contrib: Path, example_source: dict[str, str]) -> None:
    report = validate_path(contrib, sources=example_source)
    assert report.violations == []
    assert report.rows == 6 and report.files == 1


def test_example_passes_cli(contrib: Path) -> None:
    res = CliRunner().invoke(main, ["validate", str(contrib)])
    assert res.exit_code == 0, res.output
    assert "OK: 6 row(s) in 1 file(s), 0 violations" in res.output


def _rows_edit(fn: Callable[[list[dict[str, Any]]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        rows = read_jsonl(folder / "rows.jsonl")
        fn(rows)
        write_jsonl(folder / "rows.jsonl", rows)

    return edit


def _header_edit(fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        header = yaml.safe_load((folder / "contribution.yaml").read_text())
        fn(header)
        (folder / "contribution.yaml").write_text(yaml.safe_dump(header))

    return edit


def _wrong_key(rows: list[dict[str, Any]]) -> None:
    rows[2]["answer"] = (rows[2]["answer"] + 1) % 4
    if rows[2]["answer"] == rows[2]["replaced_index"]:
        rows[2]["answer"] = (rows[2]["answer"] + 1) % 4


def _dup_choices(rows: list[dict[str, Any]]) -> None:
    r = rows[1]
    others = [i for i in range(4) if i not in (r["answer"], r["replaced_index"])]
    r["choices"][others[0]] = r["choices"][r["answer"]]


def _na_twice(rows: list[dict[str, Any]]) -> None:
    r = rows[3]
    other = next(i for i in range(4) if i not in (r["answer"], r["replaced_index"]))
    r["choices"][other] = r["na_text"]


def _unknown_id(rows: list[dict[str, Any]]) -> None:
    rows[4]["id"] = "mmlu/all/dev/99999"


def _symlink_out(folder: Path) -> None:
    outside = folder.parent.parent / "secret.jsonl"
    outside.write_text("{}\n")
    os.symlink(outside, folder / "extra.jsonl")


def _oversize(folder: Path) -> None:
    with (folder / "notes.txt").open("wb") as fh:  # sparse: no disk used
        fh.truncate(21 * 2**20)


def _bad_yaml(folder: Path) -> None:
    (folder / "contribution.yaml").write_text(f"name: {NAME}\nauthor: [unclosed\n")


def _golden_mismatch(folder: Path) -> None:
    tests = json.loads((folder / "tests.json").read_text())
    out = tests["test_cases"][0]["output"]
    # A different (still valid) distractor replaced: the builder would not produce this.
    new = next(i for i in range(4) if i not in (out["answer"], out["replaced_index"]))
    out["choices"] = list(out["original_choices"])
    out["choices"][new] = out["na_text"]
    out["replaced_index"] = new
    (folder / "tests.json").write_text(json.dumps(tests, indent=2))


def _release(tmp: Path) -> Path:
    release = tmp / "release"
    (release / "na_distractor").mkdir(parents=True)
    row = read_jsonl(EXAMPLE / "rows.jsonl")[5]
    pq.write_table(
        pa.Table.from_pylist([row], schema=PERTURBED_ARROW),
        release / "na_distractor" / "test-00000-of-00001.parquet",
    )
    return release


CASES: list[tuple[str, Callable[[Path], None], str]] = [
    (
        "wrong key",
        _rows_edit(_wrong_key),
        f"{NAME}/rows.jsonl row 3 id={IDS[2]}: [na_distractor_key_is_gold]",
    ),
    (
        "duplicate choices",
        _rows_edit(_dup_choices),
        f"{NAME}/rows.jsonl row 2 id={IDS[1]}: [choices_distinct]",
    ),
    (
        "NA twice",
        _rows_edit(_na_twice),
        f"{NAME}/rows.jsonl row 4 id={IDS[3]}: [na_exactly_once] "
        "'None of these answers' appears 2 times",
    ),
    (
        "unknown source id",
        _rows_edit(_unknown_id),
        f"{NAME}/rows.jsonl row 5 id=mmlu/all/dev/99999: [source_id_known]",
    ),
    (
        "content differs from source",
        _rows_edit(lambda rows: rows[0].update(question="Which planet is largest?")),
        f"{NAME}/rows.jsonl row 1 id={IDS[0]}: [source_row_matches] "
        "row disagrees with its source item on question",
    ),
    (
        "../ in a file name",
        _header_edit(lambda h: h.update(data=["../rows.jsonl"])),
        f"{NAME}/contribution.yaml: [safe_file_name] data entry '../rows.jsonl'",
    ),
    ("symlink out of the folder", _symlink_out, f"{NAME}/extra.jsonl: [symlink_escape]"),
    (
        "file over the size limit",
        _oversize,
        f"{NAME}/notes.txt: [size_limit] 22020096 bytes exceeds the limit of 20971520 bytes",
    ),
    ("bad YAML header", _bad_yaml, f"{NAME}/contribution.yaml: [header_yaml] invalid YAML at line"),
    (
        "missing header field",
        _header_edit(lambda h: h.pop("author")),
        f"{NAME}/contribution.yaml: [header:author] required field is missing",
    ),
    (
        "wrong licence type",
        _header_edit(lambda h: h.update(licence=["mit"])),
        f"{NAME}/contribution.yaml: [header:licence]",
    ),
    (
        "licence not allowed",
        _header_edit(lambda h: h.update(licence="gpl-3.0")),
        f"{NAME}/contribution.yaml: [header:licence] Input should be 'mit'",
    ),
    (
        "golden pair mismatch",
        _golden_mismatch,
        f"{NAME}/tests.json row 1 id={IDS[0]}: [golden_pair_mismatch] builder "
        "'na_distractor' gives another output: choices: expected",
    ),
    (
        "header name differs from folder",
        _header_edit(lambda h: h.update(name="another-name")),
        f"{NAME}/contribution.yaml: [header_name]",
    ),
    (
        "undeclared row file",
        lambda f: shutil.copy(f / "rows.jsonl", f / "more.jsonl"),
        f"{NAME}/more.jsonl: [data_file_declared]",
    ),
    (
        "broken JSON row",
        lambda f: (f / "rows.jsonl").write_text(
            (f / "rows.jsonl").read_text().replace("}\n", "\n", 1)
        ),
        f"{NAME}/rows.jsonl row 1 id=-: [row_json] line 1:",
    ),
    (
        "row schema",
        _rows_edit(lambda rows: rows[5].update(answer=-1)),
        f"{NAME}/rows.jsonl row 6 id={IDS[5]}: [schema:answer]",
    ),
]


@pytest.mark.parametrize(("corrupt", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_corruption_is_caught(
    contrib: Path,
    example_source: dict[str, str],
    corrupt: Callable[[Path], None],
    expected: str,
) -> None:
    corrupt(contrib / NAME)
    found = messages(contrib, sources=example_source)
    assert any(m.startswith(expected) for m in found), "\n".join(found)
    res = CliRunner().invoke(main, ["validate", str(contrib)])
    if "source" not in expected:  # the CLI has no --source yet: traceability rules need one
        assert res.exit_code == 1, res.output


def test_builder_that_borrows_from_other_items_is_refused(contrib: Path) -> None:
    """`foreign_key` borrows another item's gold text, so a contribution's rows alone cannot
    be rebuilt with it: one violation naming it (was `internal error: TypeError`)."""
    _header_edit(lambda h: h["parameters"].update(builder="foreign_key"))(contrib / NAME)
    res = CliRunner().invoke(main, ["validate", str(contrib)])
    assert res.exit_code == 1, res.output
    assert "internal error" not in res.output
    assert (
        f"{NAME}/contribution.yaml: [header:parameters] builder 'foreign_key' cannot be "
        "rebuilt from a contribution's rows alone"
    ) in res.output


def test_na_keyed_last_text_must_be_an_na_phrasing(contrib: Path) -> None:
    """Every variant's inserted text is checked for the audit reason its builder inserts:
    `na_keyed_last` with "All of the above" as its NA text was accepted (any reason did)."""
    _header_edit(
        lambda h: h["parameters"].update(builder="na_keyed_last", na_text="All of the above")
    )(contrib / NAME)
    found = messages(contrib)
    assert any("[na_text_recognised] parameters.na_text 'All of the above'" in m for m in found)


def test_duplicate_against_release(
    contrib: Path, example_source: dict[str, str], tmp_path: Path
) -> None:
    release = _release(tmp_path)
    found = messages(contrib, sources=example_source, release=release)
    assert found == [
        f"{NAME}/rows.jsonl row 6 id={IDS[5]}: [duplicate_of_release] already "
        "released as na_distractor/test-00000-of-00001.parquet row 1"
    ]


def test_missing_header_folder(contrib: Path) -> None:
    (contrib / "half-done").mkdir()
    assert messages(contrib) == ["half-done: [header_present] folder has no contribution.yaml"]


def test_size_limit_is_configurable(contrib: Path) -> None:
    found = messages(contrib, limits=Limits(max_file_bytes=1000))
    assert any(m.startswith(f"{NAME}/rows.jsonl: [size_limit]") for m in found), found


def test_traceability_against_real_mmlu(tmp_path: Path, mmlu_dir: Path) -> None:
    """A contribution built in tmp from real MMLU rows traces to ../shared/data; a wrong id
    does not. (Real rows are never written into the repository.)"""
    from nabench.sources import get_source

    items = get_source("mmlu").load("test", location=str(mmlu_dir)).items.slice(100, 5)
    inputs = items.to_pylist()
    params = {"builder": "na_keyed", "na_text": "None of the above", "seed": 11}
    rows = rebuild(inputs, params, [{}] * len(inputs))
    folder = tmp_path / "contributions" / "mmlu-na-keyed"
    folder.mkdir(parents=True)
    write_jsonl(folder / "rows.jsonl", rows)
    (folder / "tests.json").write_text(
        json.dumps({"type": "na_keyed", "test_cases": [{"input": inputs[0], "output": rows[0]}]})
    )
    header = {
        "name": "mmlu-na-keyed",
        "author": "test",
        "licence": "mit",
        "description": "NA keyed rows built from real MMLU rows in a temp dir.",
        "source": {"dataset": "mmlu", "config": "all", "split": "test"},
        "data": ["rows.jsonl"],
        "parameters": params,
    }
    (folder / "contribution.yaml").write_text(yaml.safe_dump(header))
    sources = {"mmlu": str(mmlu_dir)}
    assert messages(folder.parent, sources=sources) == []

    rows[3]["id"] = "mmlu/all/test/99999"
    write_jsonl(folder / "rows.jsonl", rows)
    assert messages(folder.parent, sources=sources) == [
        "mmlu-na-keyed/rows.jsonl row 4 id=mmlu/all/test/99999: [source_id_known] id is not a "
        "row of mmlu all/test"
    ]


def test_module_command_with_options(contrib: Path, example_source: dict[str, str]) -> None:
    """`python -m nabench.validate.contributions DIR --source ... --release ...` (used by CI)."""
    _rows_edit(_unknown_id)(contrib / NAME)
    with pytest.raises(SystemExit) as exc:
        contributions_main([str(contrib), "--source", f"mmlu={example_source['mmlu']}"])
    assert exc.value.code == 1


def test_workflow_runs_the_validator() -> None:
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "validate-contributions.yml").read_text())
    steps = wf["jobs"]["validate"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert 'nabench validate contributions/ "${args[@]}" --release release' in runs
    assert "--release release" in runs and "--source" in runs
    assert wf[True]["pull_request"]["paths"] == ["contributions/**"]  # YAML 1.1: on -> True
