"""`--out` replaces only a nabench build, one build at a time, and collects what a killed
build left behind (issue 08, "`--out` safety")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from safety_helpers import REPO, build_args, hidden, nabench, tree_bytes

from nabench.core.out_guard import OutError, OutLock
from nabench.schemas.manifest import Manifest
from nabench.stage.hub_layout import StagedTable, StagingArea


def _user_files(folder: Path) -> dict[str, bytes]:
    (folder / "notes").mkdir(parents=True)
    (folder / "paper.tex").write_text("\\section{Results}\n")
    (folder / "notes" / "todo.md").write_text("- rerun\n")
    (folder / "data.parquet").write_bytes(b"PAR1 not really")
    return tree_bytes(folder)


@pytest.mark.parametrize("where", ["subfolder", "cwd"])
def test_out_on_a_folder_of_user_files_is_refused(
    mmlu_dir: Path, tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    before = _user_files(project)
    monkeypatch.chdir(project)
    out = "." if where == "cwd" else str(project)
    run = nabench(
        *build_args(mmlu_dir, out, "--labels", "none", limit=5),
        "mmlu-na",
    )
    assert run.code != 0
    assert len(run.errors) == 1 and "not a nabench build" in run.errors[0], run.stderr
    assert tree_bytes(project) == before
    assert hidden(tmp_path) == []


def test_out_on_an_existing_file_is_refused(mmlu_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "existing.parquet"
    target.write_bytes(b"user data")
    run = nabench(*build_args(mmlu_dir, target, "--labels", "none"), "mmlu-na")
    assert run.code != 0 and "is a file" in run.errors[0], run.stderr
    assert target.read_bytes() == b"user data"
    assert hidden(tmp_path) == []


def test_out_below_an_existing_file_is_refused_in_one_line(mmlu_dir: Path, tmp_path: Path) -> None:
    """`--out notes.txt/build`: the parent is a file. It was `internal error:
    FileExistsError: [Errno 17] File exists` (exit 3), naming neither --out nor the cause."""
    user = tmp_path / "notes.txt"
    user.write_bytes(b"user data")
    run = nabench(*build_args(mmlu_dir, user / "build", "--labels", "none", limit=3), "mmlu-na")
    assert run.code == 2, run.stderr
    assert len(run.errors) == 1, run.stderr
    assert "internal error" not in run.errors[0]
    assert f"--out {user / 'build'}" in run.errors[0] and "not a folder" in run.errors[0]
    assert user.read_bytes() == b"user data"
    assert hidden(tmp_path) == []


def test_out_home_is_refused(mmlu_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = _user_files(home)
    run = nabench(
        *build_args(mmlu_dir, "~", "--labels", "none", limit=5),
        "mmlu-na",
        env={"HOME": str(home)},
    )
    assert run.code != 0 and len(run.errors) == 1, run.stderr
    assert tree_bytes(home) == before


def test_a_build_with_foreign_files_is_refused_and_a_clean_one_replaced(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "b"
    assert nabench(*build_args(mmlu_dir, out, "--labels", "none"), "mmlu-na").code == 0
    (out / "my-analysis.ipynb").write_text("{}")
    before = tree_bytes(out)
    run = nabench(*build_args(mmlu_dir, out, "--labels", "none", limit=6), "mmlu-na")
    assert run.code != 0 and "my-analysis.ipynb" in run.errors[0], run.stderr
    assert tree_bytes(out) == before

    (out / "my-analysis.ipynb").unlink()
    run = nabench(*build_args(mmlu_dir, out, "--labels", "none", limit=6), "mmlu-na")
    assert run.code == 0, run.stderr
    version = yaml.safe_load((REPO / "nabench/recipes/mmlu-na.yaml").read_text())["version"]
    assert f"replaced the previous build in {out}: mmlu-na v{version}" in run.stderr
    assert hidden(tmp_path) == []


def test_a_second_build_into_a_locked_target_fails_clearly(tmp_path: Path) -> None:
    out = tmp_path / "repo"
    lock = OutLock(out)
    lock.acquire()
    try:
        with pytest.raises(OutError, match="another nabench build is writing"):
            StagingArea(out)
    finally:
        lock.release()
    with StagingArea(out) as area:  # free again
        area.add(StagedTable("cfg", "test", pa.table({"id": ["a"]})))
        area.commit(lambda c, i: "card\n", Manifest(nabench_version="x"))
    assert hidden(tmp_path) == []


def test_concurrent_builds_never_leave_a_mix(mmlu_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nabench.cli",
                *build_args(mmlu_dir, out, "--labels", "none", limit=n),
                "mmlu-na",
            ],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (8, 9)
    ]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    assert any(code == 0 for code, _ in results), results
    for code, err in results:
        assert code == 0 or "another nabench build is writing" in err, err
        assert "ENOTEMPTY" not in err and "internal error" not in err
    assert hidden(tmp_path) == []
    assert nabench("validate", str(out)).code == 0


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_temp_folders_of_a_killed_build_are_collected_next_run(
    mmlu_dir: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "b"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nabench.cli",
            *build_args(mmlu_dir, out, "--labels", "none", limit=14000),
            "mmlu-na",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while not any(n.startswith(".b.tmp-") for n in hidden(tmp_path)):
        assert proc.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    assert any(n.startswith(".b.tmp-") for n in hidden(tmp_path))  # what used to stay forever
    assert not out.exists()

    run = nabench(*build_args(mmlu_dir, out, "--labels", "none", limit=5), "mmlu-na")
    assert run.code == 0, run.stderr
    assert "left behind by an interrupted build" in run.stderr
    assert hidden(tmp_path) == []
