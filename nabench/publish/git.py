"""Apply a publish plan to a local git repository: one commit on the branch + an annotated tag.

The commit is written with plumbing (a private index, `hash-object`, `write-tree`,
`commit-tree`), so its tree is exactly the planned tree; the branch then moves by
compare-and-swap (`update-ref NEW OLD` in a bare repository, `merge --ff-only` in a work tree),
which refuses when the head moved meanwhile. An existing tag is refused.
A team pushes the result to an internal remote with `git push --follow-tags`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nabench.publish.plan import MANIFEST, README, PublishError, PublishPlan, RemoteState, make_plan

BRANCH = "main"
_ENV = {
    "GIT_AUTHOR_NAME": "nabench",
    "GIT_AUTHOR_EMAIL": "nabench@localhost",
    "GIT_COMMITTER_NAME": "nabench",
    "GIT_COMMITTER_EMAIL": "nabench@localhost",
}


@dataclass(frozen=True)
class GitResult:
    path: Path
    tag: str
    commit: str
    plan: PublishPlan


def _git(
    repo: Path,
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, **_ENV, **(env or {})}
    # The user's identity wins where configured; ours is only the fallback.
    for key in _ENV:
        if key in os.environ:
            full_env[key] = os.environ[key]
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        env=full_env,
        check=False,
    )
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise PublishError(f"git {args[0]} failed in {repo}: {err}")
    return proc


def _out(repo: Path, *args: str) -> str:
    return _git(repo, *args).stdout.decode().strip()


def _is_bare(repo: Path) -> bool:
    return _out(repo, "rev-parse", "--is-bare-repository") == "true"


def open_repo(path: Path, *, create: bool = True) -> Path:
    """The repository at `path`; a missing folder becomes a new bare repository."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise PublishError(f"{path} does not exist")
        path.mkdir(parents=True)
        _git(path, "init", "--quiet", "--bare", f"--initial-branch={BRANCH}")
        return path
    proc = _git(path, "rev-parse", "--git-dir", check=False)
    if proc.returncode != 0:
        raise PublishError(f"{path} is not a git repository")
    return path


def _rev(repo: Path, ref: str) -> str | None:
    proc = _git(repo, "rev-parse", "--quiet", "--verify", f"{ref}^{{commit}}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _branch(repo: Path) -> str:
    proc = _git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    name = proc.stdout.decode().strip()
    if proc.returncode != 0 or not name:
        raise PublishError(f"{repo}: HEAD is detached; check out a branch first")
    return name


def remote_state(repo: Path) -> RemoteState:
    branch = _branch(repo)
    head = _rev(repo, f"refs/heads/{branch}")
    tags = frozenset(line for line in _out(repo, "tag", "--list").splitlines() if line.strip())
    if head is None:
        return RemoteState(tags=tags)
    files = tuple(
        p for p in _out(repo, "ls-tree", "-r", "--name-only", "-z", head).split("\0") if p
    )

    def show(name: str) -> str | None:
        if name not in files:
            return None
        return _git(repo, "show", f"{head}:{name}").stdout.decode("utf-8")

    text = show(MANIFEST)
    try:
        manifest = json.loads(text) if text else None
    except json.JSONDecodeError:
        manifest = None
    return RemoteState(head, files, tags, show(README), manifest)


def plan_for_git(
    staged: Path, path: Path, repo_id: str, *, version: str | None = None
) -> PublishPlan:
    """The plan against the repository's current state (reads only; creates nothing)."""
    state = remote_state(path) if path.exists() else RemoteState()
    plan = make_plan(staged, repo_id, version=version, remote=state)
    check_tag_name(plan.tag)
    return plan


def check_tag_name(tag: str) -> None:
    """Refuse a tag git would refuse, before anything is committed (`git check-ref-format`)."""
    proc = subprocess.run(
        ["git", "check-ref-format", f"refs/tags/{tag}"], capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise PublishError(
            f"tag {tag!r} is not a valid git tag name (git check-ref-format); nothing was "
            "committed: choose another --version (no '.lock' suffix, '..', spaces or ~^:?*[)"
        )


def _check_clean(repo: Path) -> None:
    if _is_bare(repo):
        return
    dirty = _out(repo, "status", "--porcelain", "--untracked-files=no")
    if dirty:
        raise PublishError(f"{repo}: the work tree has uncommitted changes; commit or stash them")


def publish_to_git(
    staged: Path, path: Path, repo_id: str, *, version: str | None = None
) -> GitResult:
    """Commit the staged tree on the current branch of `path` and tag it `v<version>`."""
    repo = open_repo(Path(path))
    _check_clean(repo)
    branch = _branch(repo)
    state = remote_state(repo)
    plan = make_plan(staged, repo_id, version=version, remote=state)
    check_tag_name(plan.tag)
    kept = [p for p in state.files if p not in plan.tree and p not in plan.deletes]

    with tempfile.TemporaryDirectory(prefix="nabench-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        entries = []
        for f in plan.adds:
            oid = (
                _git(repo, "hash-object", "-w", "--stdin", stdin=f.content).stdout.decode().strip()
            )
            entries.append(f"100644 {oid}\t{f.path}")
        if kept and state.head:
            for line in _out(repo, "ls-tree", "-r", state.head, "--", *kept).splitlines():
                mode_type_oid, _, name = line.partition("\t")
                mode, _, oid_kept = mode_type_oid.split()
                entries.append(f"{mode} {oid_kept}\t{name}")
        _git(
            repo, "update-index", "--index-info", stdin="\n".join(entries).encode() + b"\n", env=env
        )
        tree = _out_env(repo, env, "write-tree")
    args = ["commit-tree", tree, "-m", plan.commit_message, "-m", plan.commit_description]
    if state.head:
        args[2:2] = ["-p", state.head]
    commit = _out(repo, *args)

    if _is_bare(repo) or state.head is None:
        old = state.head or "0" * 40
        proc = _git(repo, "update-ref", f"refs/heads/{branch}", commit, old, check=False)
        if proc.returncode != 0:
            raise PublishError(
                f"{repo}: the head of {branch} moved since {state.head}; nothing was published"
            )
        if not _is_bare(repo):
            _git(repo, "reset", "--quiet", "--hard", commit)
    else:
        proc = _git(repo, "merge", "--quiet", "--ff-only", commit, check=False)
        if proc.returncode != 0:
            raise PublishError(
                f"{repo}: the head of {branch} moved since {state.head} (or the work tree "
                f"blocks the update); nothing was published: "
                f"{proc.stderr.decode(errors='replace').strip()}"
            )
    proc = _git(repo, "tag", "-a", plan.tag, "-m", plan.commit_message, commit, check=False)
    if proc.returncode != 0:
        raise PublishError(
            f"{repo}: tag {plan.tag} could not be created ({proc.stderr.decode().strip()}); "
            f"commit {commit} is on {branch} but untagged"
        )
    return GitResult(repo, plan.tag, commit, plan)


def _out_env(repo: Path, env: dict[str, str], *args: str) -> str:
    return _git(repo, *args, env=env).stdout.decode().strip()
