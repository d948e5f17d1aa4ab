"""What used to end in "internal error" is one line naming the file and the fix (issue 08,
"Rough failures")."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from safety_helpers import build_args, llm_recipe, nabench, write_recipe

from nabench.core.errors import NabenchError
from nabench.llm import ResponseCache


def _one_line(run_args: tuple[str, ...], expect: str) -> str:
    run = nabench(*run_args)
    assert run.code not in (0, 3), run.stderr  # 3 is "internal error"
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.errors) == 1, run.stderr
    assert expect in run.errors[0], run.errors[0]
    return run.errors[0]


def test_corrupt_cache_names_the_file(mmlu_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "responses.sqlite"
    cache.write_bytes(b"this is not a database, it was truncated by a full disk" * 20)
    recipe = write_recipe(tmp_path / "r.yaml", llm_recipe("http://127.0.0.1:9/v1"))
    line = _one_line(
        (*build_args(mmlu_dir, tmp_path / "b", "--cache", str(cache)), str(recipe)),
        "is not a nabench response cache",
    )
    assert str(cache) in line and "--cache" in line


@pytest.fixture
def read_only_cache(tmp_path: Path) -> Iterator[Path]:
    """A real cache on which writes fail: chmod, and as root (who ignores modes) chattr +i."""
    folder = tmp_path / "ro"
    folder.mkdir()
    cache = folder / "responses.sqlite"
    ResponseCache(cache).close()
    con = sqlite3.connect(cache)
    con.execute("PRAGMA journal_mode=DELETE")  # no -wal/-shm files: one file to protect
    con.close()
    cache.chmod(0o444)
    folder.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable:
        for p in (cache, folder):
            subprocess.run(["chattr", "+i", str(p)], check=True)
    try:
        yield cache
    finally:
        if immutable:
            for p in (folder, cache):
                subprocess.run(["chattr", "-i", str(p)], check=False)
        folder.chmod(0o755)


def test_read_only_cache_names_the_file(read_only_cache: Path) -> None:
    with pytest.raises(NabenchError, match="is read-only") as info:
        ResponseCache(read_only_cache)
    assert str(read_only_cache) in str(info.value) and "--cache" in str(info.value)


def test_huge_seed_is_a_usage_error(mmlu_dir: Path, tmp_path: Path) -> None:
    run = nabench(
        *build_args(mmlu_dir, tmp_path / "b", "--labels", "none", "--seed", "9" * 30), "mmlu-na"
    )
    assert run.code == 2 and "--seed" in run.stderr and "internal error" not in run.stderr
    assert not (tmp_path / "b").exists()


def test_huge_seed_in_a_recipe_names_the_field(tmp_path: Path) -> None:
    text = llm_recipe("http://127.0.0.1:9/v1").replace("seed: 7", f"seed: {10**30}")
    recipe = write_recipe(tmp_path / "r.yaml", text)
    line = _one_line(("build", str(recipe), "--labels", "none"), "field 'seed'")
    assert str(recipe) in line


def test_recipe_in_invalid_utf8_names_the_file(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes(b"name: caf\xe9\nversion: 1.0.0\n")  # Latin-1, not UTF-8
    line = _one_line(("build", str(recipe), "--labels", "none"), "not valid UTF-8")
    assert str(recipe) in line and "byte 9" in line
