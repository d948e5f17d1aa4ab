"""Hostile inputs get a message that names the real cause: one `error:` line (or a
quarantine reason) saying what is wrong with the input, never a misleading one."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safety_helpers import (
    Run,
    build_args,
    copy_arc_source,
    nabench,
    nabench_process,
    write_recipe,
)

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


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x", "PATH": "/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    return done.stdout.decode()


@pytest.mark.parametrize("dry_run", [True, False])
def test_publish_to_a_plain_folder_says_it_is_no_git_repository(
    plain_build: Path, tmp_path: Path, dry_run: bool
) -> None:
    """`--dry-run` said "HEAD is detached; check out a branch first" of a plain folder."""
    folder = tmp_path / "plain"
    folder.mkdir()
    extra = ("--dry-run",) if dry_run else ()
    run = nabench(
        "publish", str(plain_build), "--repo-id", "org/x", "--to", f"git:{folder}", *extra
    )
    line = _one_error(run)
    assert line == f"error: {folder} is not a git repository", line
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("dry_run", [True, False])
def test_publish_to_a_folder_inside_a_repository_is_refused(
    plain_build: Path, tmp_path: Path, dry_run: bool
) -> None:
    """git answers for the repository a folder lies in: a plain folder inside a work tree was
    planned against, and published to, the enclosing repository's root."""
    outer = tmp_path / "outer"
    outer.mkdir()
    _git(outer, "init", "--quiet", "--initial-branch=main")
    _git(outer, "commit", "--quiet", "--allow-empty", "-m", "mine")
    sub = outer / "sub"
    sub.mkdir()
    head = _git(outer, "rev-parse", "HEAD")
    extra = ("--dry-run",) if dry_run else ()
    run = nabench("publish", str(plain_build), "--repo-id", "org/x", "--to", f"git:{sub}", *extra)
    line = _one_error(run)
    assert f"{sub} is not a git repository (it lies inside the one at {outer})" in line, line
    assert _git(outer, "rev-parse", "HEAD") == head
    assert _git(outer, "tag", "--list") == ""
    assert list(sub.iterdir()) == []


@pytest.mark.parametrize(("value", "what"), [(None, "null"), ("  ", "blank")])
def test_an_arc_row_without_an_id_is_refused(
    arc_dir: Path, tmp_path: Path, value: str | None, what: str
) -> None:
    """One null id was built and validated as the item `arc_challenge/test/None` (two said
    "id ... is repeated")."""

    def no_id(rows: list[dict[str, object]]) -> None:
        rows[3]["id"] = value

    source = copy_arc_source(arc_dir, tmp_path / "arc", no_id)
    out = tmp_path / "out"
    line = _one_error(nabench(*build_args(source, out, "--labels", "none"), "arc-na"))
    assert f"row 3 (counting from 0): 'id' is {what}" in line, line
    assert not out.exists()


def test_a_hellaswag_row_without_an_ind_is_refused(hellaswag_dir: Path, tmp_path: Path) -> None:
    """A null `ind` was `internal error: TypeError`."""
    source = tmp_path / "hs"
    shutil.copytree(hellaswag_dir, source)
    path = source / "data" / "validation-00000-of-00001.parquet"
    table = pq.read_table(path)
    inds = table.column("ind").to_pylist()
    inds[1] = None
    i = table.schema.get_field_index("ind")
    pq.write_table(table.set_column(i, "ind", pa.array(inds, table.schema.field(i).type)), path)
    out = tmp_path / "out"
    args = ["build", "hellaswag-na", "--source", str(source), "--out", str(out), "--quiet"]
    line = _one_error(nabench(*args, "--split", "validation", "--labels", "none"))
    assert "row 1 (counting from 0): 'ind' is null" in line, line
    assert not out.exists()


def _location_args(command: str, location: str, tmp_path: Path) -> list[str]:
    """`build`, `eval` or `export lm-eval` of `location` (its --source / DATASET / BUILD)."""
    out = str(tmp_path / f"out-{command}")
    if command == "build":
        return ["build", "mmlu-na", "--source", location, "--labels", "none", "--out", out]
    if command == "eval":
        return ["eval", location, "--backend", "reference", "--model", "oracle", "--out", out]
    return ["export", "lm-eval", location, "--out", out]


@pytest.mark.parametrize("location", ["./org/name", "/nabench-no-such-build", "no-such-build"])
def test_every_command_says_a_missing_folder_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, location: str
) -> None:
    """A missing folder was "source path ... does not exist" (build), "...: no such build
    folder (and not a Hub dataset id ORG/NAME)" (eval) and "build folder ... does not exist"
    with or without " and is no Hub id (ORG/NAME)" (export): three rules, three messages."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org").mkdir()
    for command in ("build", "eval", "export"):
        line = _one_error(nabench(*_location_args(command, location, tmp_path)))
        assert line == f"error: {location!r} does not exist here and is no Hub id (ORG/NAME)", (
            command,
            line,
        )
        assert not (tmp_path / f"out-{command}").exists()


def test_a_file_given_for_a_build_folder_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval results.csv` and `export lm-eval test.parquet` asked the Hub for the dataset
    `results.csv` (~30 s of retries), then said the Hub was unreachable."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test.parquet").write_bytes(b"PAR1")
    for command in ("eval", "export"):
        t0 = time.perf_counter()
        line = _one_error(nabench(*_location_args(command, "test.parquet", tmp_path)))
        assert "'test.parquet' is a file" in line and "Hub" not in line.split(";")[0], line
        assert time.perf_counter() - t0 < 5.0, command
        assert not (tmp_path / f"out-{command}").exists()


def test_every_command_asks_the_hub_for_org_name_where_a_folder_org_exists(
    tmp_path: Path,
) -> None:
    """`ORG/NAME` beside a folder `ORG` (the org `nabench` beside the package folder) is a Hub
    id for every command: build and eval refused it as a missing folder, export asked the Hub."""
    (tmp_path / "nabench").mkdir()
    for command in ("build", "eval", "export"):
        args = _location_args(command, "nabench/mmlu-na", tmp_path)
        line = _one_error(nabench_process(*args, cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"}))
        assert "does not exist" not in line and "no such" not in line, (command, line)
        assert "the Hub" in line, (command, line)
        # a mistyped local path reads as one too (the Hub's retries took ~25 s before it)
        assert "there is no folder 'nabench/mmlu-na' here either" in line, (command, line)
