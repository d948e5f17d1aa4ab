"""Hostile files: alias bombs, deep JSON, invalid UTF-8 and huge integers are refused fast,
each reported with its file, and one bad contribution never hides the others. Plus the
contribution rules an attacker would try to slip past, and the shipped workflow's command."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.core.errors import RecipeError
from nabench.core.safe_load import ParseLimits, UnsafeInput, load_json, load_yaml
from nabench.pipelines.registry import read_recipe_file
from nabench.validate import validate_path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contributions" / "example-na-distractor-none-of-these"


def _laughs(levels: int = 9) -> str:
    """The classic billion-laughs document: 9 levels of 9 aliases (9**9 strings expanded)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghij"
    for prev, name in itertools.pairwise(names[: levels + 1]):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _measured(fn: Callable[[], Any]) -> tuple[Any, float, int]:
    """(result or raised exception, seconds, peak bytes allocated by Python meanwhile)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        result: Any = fn()
    except Exception as exc:  # the refusal is the expected outcome
        result = exc
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, seconds, peak


def _contribution(root: Path, name: str) -> Path:
    folder = root / name
    shutil.copytree(EXAMPLE, folder)
    header = yaml.safe_load((folder / "contribution.yaml").read_text())
    header["name"] = name
    (folder / "contribution.yaml").write_text(yaml.safe_dump(header))
    return folder


def test_billion_laughs_contribution_is_refused_fast(tmp_path: Path) -> None:
    root = tmp_path / "contributions"
    folder = _contribution(root, "bomb")
    (folder / "contribution.yaml").write_text(_laughs() + "name: bomb\n")
    assert len((folder / "contribution.yaml").read_bytes()) < 800
    report, seconds, peak = _measured(lambda: validate_path(root))
    assert seconds < 2 and peak < 200 * 2**20, (seconds, peak)
    assert [str(v) for v in report.violations] == [
        "bomb/contribution.yaml: [header_yaml] more than 5000 values once aliases are expanded "
        "(a YAML alias bomb or a recursive alias?)"
    ]


def test_billion_laughs_recipe_is_refused_fast(tmp_path: Path) -> None:
    recipe = tmp_path / "bomb.yaml"
    recipe.write_text(
        "name: bomb\nversion: 1.0.0\nkind: na\n" + _laughs().replace("a: &a", "x: &a")
    )
    error, seconds, peak = _measured(lambda: read_recipe_file(recipe))
    assert isinstance(error, RecipeError) and "alias" in str(error) and str(recipe) in str(error)
    assert seconds < 2 and peak < 200 * 2**20, (seconds, peak)
    res = CliRunner().invoke(main, ["build", str(recipe), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "alias" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: &a [*a]\n", "recursive alias"),
        ("x: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64 levels"),
        ("n: " + "7" * 100_000 + "\n", "an integer of 100000 digits"),
    ],
    ids=["recursive alias", "deep", "huge int"],
)
def test_yaml_limits(text: str, problem: str) -> None:
    with pytest.raises(UnsafeInput, match=r"^doc\.yaml: ") as exc:
        load_yaml(text, "doc.yaml", ParseLimits(max_bytes=10**6))
    assert problem in str(exc.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
        ('{"n": ' + "9" * 100_000 + "}", "an integer of 100000 digits"),
        ('{"n": NaN}', "NaN is not JSON"),
    ],
    ids=["very deep", "deep", "huge int", "NaN"],
)
def test_json_limits(text: str, problem: str) -> None:
    with pytest.raises(UnsafeInput, match=r"^row\.json: ") as exc:
        load_json(text, "row.json", ParseLimits(max_bytes=10**6))
    assert problem in str(exc.value)


def test_malformed_contributions_are_each_reported(tmp_path: Path) -> None:
    root = tmp_path / "contributions"
    first = (EXAMPLE / "rows.jsonl").read_text().splitlines()[0]
    bad_rows = {
        "deep-json": "[" * 50_000 + "]" * 50_000,
        "huge-int": first.replace('"seed": 7', '"seed": ' + "7" * 100_000),
        "bad-utf8": None,
    }
    for name, line in bad_rows.items():
        folder = _contribution(root, name)
        rows = (folder / "rows.jsonl").read_bytes()
        head = b"\xff\xfe not utf-8\n" if line is None else (line + "\n").encode()
        (folder / "rows.jsonl").write_bytes(head + rows)
    (_contribution(root, "bad-header") / "contribution.yaml").write_bytes(b"name: \xff\xfe\n")
    good = _contribution(root, "still-checked")
    rows = [json.loads(x) for x in (good / "rows.jsonl").read_text().splitlines()]
    rows[2]["answer"] = (rows[2]["answer"] + 1) % 4
    (good / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    found = [str(v) for v in validate_path(root).violations]
    text = "\n".join(found)
    assert "deep-json/rows.jsonl row 1 id=-: [row_json] line 1: nested deeper than" in text
    assert "huge-int/rows.jsonl row 1 id=-: [row_json] line 1: an integer of 100000 digits" in text
    assert "bad-utf8/rows.jsonl row 1 id=-: [row_json] line 1: not valid UTF-8 (byte 0)" in text
    assert "bad-header/contribution.yaml: [header_yaml] not valid UTF-8 (byte 6)" in text
    assert "still-checked/rows.jsonl row 3 id=" in text  # the good folder is still checked
    assert "Traceback" not in text and "internal error" not in text


def _edit_rows(folder: Path, fn: Callable[[list[dict[str, Any]]], None]) -> None:
    rows = [json.loads(x) for x in (folder / "rows.jsonl").read_text().splitlines()]
    fn(rows)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _header(folder: Path, fn: Callable[[dict[str, Any]], None]) -> None:
    header = yaml.safe_load((folder / "contribution.yaml").read_text())
    fn(header)
    (folder / "contribution.yaml").write_text(yaml.safe_dump(header))


def test_unknown_variant_is_a_violation(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "c", "odd-variant")
    _header(folder, lambda h: h["parameters"].pop("builder"))
    _edit_rows(folder, lambda rows: rows[1].update(variant="na_sneaky", answer=0))
    found = [str(v) for v in validate_path(tmp_path / "c").violations]
    assert any(
        "rows.jsonl row 2 " in m and "[variant_known] unknown variant 'na_sneaky'" in m
        for m in found
    ), found


def test_jupiter_as_na_text_is_refused(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "c", "jupiter")
    old = "None of these answers"

    def swap(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            r["choices"] = ["Jupiter" if c == old else c for c in r["choices"]]
            r["na_text"] = "Jupiter"

    _edit_rows(folder, swap)
    _header(folder, lambda h: h["parameters"].update(na_text="Jupiter"))
    tests = (folder / "tests.json").read_text().replace(old, "Jupiter")
    (folder / "tests.json").write_text(tests)
    found = [str(v) for v in validate_path(tmp_path / "c").violations]
    assert any(
        m.startswith("jupiter/contribution.yaml: [na_text_recognised] parameters.na_text 'Jupiter'")
        for m in found
    ), found
    assert any("jupiter/rows.jsonl row 1 " in m and "[na_text_recognised]" in m for m in found)


def test_every_row_is_rebuilt_not_only_golden_pairs(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "c", "unseeded")

    def move_na(rows: list[dict[str, Any]]) -> None:
        r = rows[4]  # not a golden pair (tests.json covers rows 1 and 2)
        new = next(j for j in range(4) if j not in (r["answer"], r["replaced_index"]))
        r["choices"] = list(r["original_choices"])
        r["choices"][new] = r["na_text"]
        r["replaced_index"] = new

    _edit_rows(folder, move_na)
    found = [str(v) for v in validate_path(tmp_path / "c").violations]
    assert len(found) == 1 and "unseeded/rows.jsonl row 5 " in found[0], found
    assert "[row_rebuild_mismatch] builder 'na_distractor' gives another row" in found[0]


def test_tests_json_type_is_checked(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "c", "wrong-type")
    tests = json.loads((folder / "tests.json").read_text())
    tests["type"] = "na_keyed"
    (folder / "tests.json").write_text(json.dumps(tests))
    found = [str(v) for v in validate_path(tmp_path / "c").violations]
    assert found == [
        "wrong-type/tests.json: [golden_type] type 'na_keyed' must be the contribution's "
        "variant 'na_distractor'"
    ]


def test_skipped_folders_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _contribution(root, "fine")
    shutil.copytree(EXAMPLE, root / ".evil")
    outside = _contribution(tmp_path / "elsewhere", "linked")
    os.symlink(outside, root / "linked")
    found = [str(v) for v in validate_path(root).violations]
    assert ".evil: [folder_skipped] a hidden folder is not checked" in "\n".join(found)
    assert "linked: [folder_skipped] a symlinked folder is not checked" in "\n".join(found)
    assert len(found) == 2


def test_shipped_workflow_command_passes(tmp_path: Path, mmlu_dir: Path) -> None:
    """The exact `run` of the workflow's validate step, with the Hub source swapped for the
    real data beside the checkout (no network here)."""
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "validate-contributions.yml").read_text())
    step = next(
        s for s in wf["jobs"]["validate"]["steps"] if s.get("name") == "Validate contributions"
    )
    shutil.copytree(REPO / "contributions", tmp_path / "contributions")
    (tmp_path / "release").mkdir()
    env = {
        **os.environ,
        "NABENCH_SOURCES": f"mmlu={mmlu_dir}",
        # the workflow's runner has the installed `nabench` on PATH; so does this venv's bin
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(
        ["bash", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK: 6 row(s) in 1 file(s), 0 violations" in proc.stdout


def test_a_jsonl_value_of_the_wrong_type_names_its_line_id_and_field(tmp_path: Path) -> None:
    """`answer: "1"` among integers was `cannot read (ArrowInvalid: ...)`, naming no row."""
    rows = [
        {"id": f"mmlu/all/test/{i:05d}", "source": "mmlu", "subject": "x", "question": "q?"}
        | {"choices": ["a", "b", "c", "d"], "answer": "1" if i == 1 else i}
        for i in range(3)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = CliRunner().invoke(main, ["validate", str(path)])
    assert run.exit_code != 0 and "Traceback" not in run.output, run.output
    (line,) = [x for x in run.output.splitlines() if x.startswith("error:")]
    assert "line 2 " in line and "mmlu/all/test/00001" in line and "'answer'" in line, line


def test_a_jsonl_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A UTF-8 BOM (Windows editors write one) was `cannot read (ValueError: Expected object
    or value at position 0)`; it is no part of the first row."""
    row = {"id": "mmlu/all/test/00000", "source": "mmlu", "subject": "x", "question": "q?"}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(row | {"choices": ["a", "b"], "answer": 1}) + "\n", "utf-8-sig")
    run = CliRunner().invoke(main, ["validate", str(path)])
    assert run.exit_code == 0 and "1 row(s)" in run.output, run.output
