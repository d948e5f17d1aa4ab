"""`publish --to git:PATH` commits exactly the validated tree and never loses a user's file
(issue 24, findings 2 and 6): real git, a real mmlu-na build."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nabench.core.card_seal import card_sha256, seal_card, unsealed
from nabench.publish import PublishError
from nabench.publish.git import _entries, publish_to_git
from nabench.publish.plan import PlannedFile, PublishPlan

REPO_ID = "org/mmlu-na"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
        env={"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
             "GIT_COMMITTER_EMAIL": "u@x", "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip


def _work_tree(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "--quiet", "--initial-branch=main")
    return path


def test_a_fresh_work_tree_keeps_an_untracked_readme(staged_v1: Path, tmp_path: Path) -> None:
    repo = _work_tree(tmp_path / "repo")
    (repo / "README.md").write_text("my own notes, not committed yet\n")
    with pytest.raises(PublishError, match=r"untracked or ignored file\(s\) \(README\.md\)"):
        publish_to_git(staged_v1, repo, REPO_ID)
    assert (repo / "README.md").read_text() == "my own notes, not committed yet\n"
    assert _git(repo, "tag", "--list") == ""


def test_an_ignored_file_in_the_way_is_kept(staged_v1: Path, tmp_path: Path) -> None:
    repo = _work_tree(tmp_path / "repo")
    (repo / ".git" / "info" / "exclude").write_text("build.json\n")
    (repo / "build.json").write_text("{}")
    with pytest.raises(PublishError, match=r"build\.json"):
        publish_to_git(staged_v1, repo, REPO_ID)
    assert (repo / "build.json").read_text() == "{}"


def test_untracked_files_elsewhere_survive_a_release(staged_v1: Path, tmp_path: Path) -> None:
    repo = _work_tree(tmp_path / "repo")
    (repo / "scratch.txt").write_text("keep")
    done = publish_to_git(staged_v1, repo, REPO_ID)
    assert (repo / "scratch.txt").read_text() == "keep"
    assert "scratch.txt" not in _git(repo, "ls-tree", "-r", "--name-only", done.commit)


def test_a_symlink_at_the_target_head_is_never_carried_into_a_release(
    staged_v1: Path, tmp_path: Path
) -> None:
    """`.gitattributes` is the one file a release keeps from the target: as a link to
    /etc/passwd (mode 120000) it was carried into the release tree."""
    repo = _work_tree(tmp_path / "repo")
    (repo / ".gitattributes").symlink_to("/etc/passwd")
    _git(repo, "add", ".gitattributes")
    _git(repo, "commit", "--quiet", "-m", "a link")
    with pytest.raises(PublishError, match="gitattributes at the head is not a regular file"):
        publish_to_git(staged_v1, repo, REPO_ID)
    assert _git(repo, "tag", "--list") == ""


def _forge_listed_file(build: Path, rel: str, data: bytes) -> None:
    """Add a file to a build and list it in build.json, the card resealed (a forger's edit)."""
    manifest = json.loads((build / "build.json").read_text())
    (build / rel).parent.mkdir(parents=True, exist_ok=True)
    (build / rel).write_bytes(data)
    manifest["files"][rel] = hashlib.sha256(data).hexdigest()
    raw = (json.dumps(manifest, indent=2) + "\n").encode()
    (build / "build.json").write_bytes(raw)
    card = unsealed((build / "README.md").read_text())
    (build / "README.md").write_text(seal_card(card, raw))


def test_a_path_with_a_newline_cannot_inject_an_index_entry(
    staged_v1: Path, tmp_path: Path
) -> None:
    """A name `x\n100644 <oid>\tna_keyed/...` made `update-index --index-info` (no -z) write
    `original`'s bytes at na_keyed's path."""
    build = tmp_path / "b"
    shutil.copytree(staged_v1, build)
    original = next(p for p in sorted((build / "original").rglob("*.parquet")))
    keyed = next(p for p in sorted((build / "na_keyed").rglob("*.parquet")))
    oid = subprocess.run(["git", "hash-object", str(original)], capture_output=True,
                         check=True, text=True).stdout.strip()  # fmt: skip
    rel = f"notes\n100644 {oid}\t{keyed.relative_to(build).as_posix()}"
    _forge_listed_file(build, rel, b"harmless")
    repo = tmp_path / "repo"
    with pytest.raises(PublishError):
        publish_to_git(build, repo, REPO_ID)
    assert not repo.exists() or _git(repo, "tag", "--list") == ""


def test_the_committed_tree_matches_build_json(staged_v1: Path, tmp_path: Path) -> None:
    repo = tmp_path / "bare"  # created bare by publish
    done = publish_to_git(staged_v1, repo, REPO_ID)
    manifest = json.loads(_git(repo, "show", f"{done.tag}:build.json"))
    for rel, digest in manifest["files"].items():
        data = subprocess.run(["git", "-C", str(repo), "show", f"{done.tag}:{rel}"],
                              capture_output=True, check=True).stdout  # fmt: skip
        got = card_sha256(data) if rel == "README.md" else hashlib.sha256(data).hexdigest()
        assert got == digest, rel
    modes = {line.split()[0] for line in _git(repo, "ls-tree", "-r", done.tag).splitlines()}
    assert modes == {"100644"}


def test_a_fifo_in_the_build_is_refused(staged_v1: Path, tmp_path: Path) -> None:
    copy = tmp_path / "b"
    shutil.copytree(staged_v1, copy)
    os.mkfifo(copy / "pipe")
    with pytest.raises(PublishError, match="pipe is not a regular file"):
        publish_to_git(copy, tmp_path / "repo", REPO_ID)


@pytest.mark.parametrize(
    "path", ["a\n100644 0000000000000000000000000000000000000000\tb", "a\tb", "../x", "/etc/x",
             ".git/config", "a//b"],
)  # fmt: skip
def test_the_git_layer_refuses_paths_plumbing_would_misread(tmp_path: Path, path: str) -> None:
    """Whatever validation lets through, the index is never fed a path that could split
    into two entries or leave the tree (the end-to-end forgery above is caught earlier)."""
    repo = _work_tree(tmp_path / "repo")
    planned = PlannedFile(path, 1, hashlib.sha256(b"x").hexdigest(), b"x")
    plan = PublishPlan("org/x", "1.0.0", "v1.0.0", "m", "d", None, (planned,), ())
    with pytest.raises(PublishError, match="not a plain relative path"):
        _entries(repo, plan, None, [])
