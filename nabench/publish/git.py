"""Apply a publish plan to a local git repository: one commit on the branch + an annotated tag.

The commit is written with plumbing (a private index, `hash-object`, `write-tree`,
`commit-tree`), so its tree is exactly the planned tree; the branch then moves by
compare-and-swap (`update-ref NEW OLD` in a bare repository, `merge --ff-only` in a work tree),
which refuses when the head moved meanwhile. An existing tag is refused.
A team pushes the result to an internal remote with `git push --follow-tags`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nabench.core.card_seal import card_sha256
from nabench.core.out_guard import check_parents
from nabench.publish.plan import (
    MANIFEST,
    README,
    PublishError,
    PublishPlan,
    RemoteState,
    make_plan,
    sha256_bytes,
)
from nabench.schemas.manifest import manifest_from_bytes, previous_manifest

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
        check_parents(path, "--to git:")
        try:
            path.mkdir(parents=True)
        except OSError as exc:  # no permission, a read-only file system
            why = exc.strerror
            raise PublishError(f"cannot make the repository folder {path}: {why}") from None
        _git(path, "init", "--quiet", "--bare", f"--initial-branch={BRANCH}")
        return path
    proc = _git(path, "rev-parse", "--is-bare-repository", "--absolute-git-dir", check=False)
    if proc.returncode != 0:
        raise PublishError(f"{path} is not a git repository")
    bare, git_dir = proc.stdout.decode().splitlines()[:2]
    # git answers for the repository a folder lies in: a plain folder inside a work tree
    # would have the release committed to the enclosing repository's root.
    top = git_dir if bare == "true" else _out(path, "rev-parse", "--show-toplevel")
    if Path(top).resolve() != path.resolve():
        raise PublishError(
            f"{path} is not a git repository (it lies inside the one at {top}); "
            "pass the repository's own folder"
        )
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

    manifest = previous_manifest(show(MANIFEST), f"{repo}:{MANIFEST}")
    return RemoteState(head, files, tags, show(README), manifest)


def plan_for_git(
    staged: Path, path: Path, repo_id: str, *, version: str | None = None
) -> PublishPlan:
    """The plan against the repository's current state (reads only; creates nothing)."""
    state = remote_state(open_repo(path, create=False)) if path.exists() else RemoteState()
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


def _clashes(path: str, written: Iterable[str]) -> bool:
    """`path` (a file, or a folder git lists whole) is, holds or lies inside a written path."""
    return any(w == path or w.startswith(path + "/") or path.startswith(w + "/") for w in written)


def _check_untouched(repo: Path, tree: Iterable[str], deletes: Iterable[str]) -> None:
    """Refuse when moving the work tree to the release would overwrite or delete a file git
    does not track (untracked or ignored) at a path the release writes or deletes, or at a
    folder/file clash with one (`reset --hard` on a fresh repository would replace it)."""
    if _is_bare(repo):
        return
    raw = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored").stdout
    loose = [
        e[3:].decode("utf-8", "surrogateescape")
        for e in raw.split(b"\0")
        if e[:3] in (b"?? ", b"!! ")
    ]
    written = {*tree, *deletes}
    clash = sorted(f for f in loose if _clashes(f.rstrip("/"), written))
    if clash:
        raise PublishError(
            f"{repo}: the release would overwrite {len(clash)} untracked or ignored file(s) "
            f"({', '.join(clash[:3])}); nothing was published: move them away or commit them"
        )


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
    _check_untouched(repo, plan.tree, plan.deletes)
    entries = _entries(repo, plan, state.head, kept)
    with tempfile.TemporaryDirectory(prefix="nabench-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        # -z: a path is NUL-terminated, so no byte in it can start another index entry.
        index_info = b"".join(
            f"{m} {o}\t{p}".encode("utf-8", "surrogateescape") + b"\0"
            for p, (m, o) in entries.items()
        )
        _git(repo, "update-index", "-z", "--index-info", stdin=index_info, env=env)
        tree = _out_env(repo, env, "write-tree")
    _verify_tree(repo, tree, entries)
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


def _check_path(path: str) -> None:
    """A release path is relative, inside the tree and free of control characters (git's
    text plumbing would split or rename it)."""
    parts = path.split("/")
    if (
        not path
        or any(ord(c) < 32 or ord(c) == 127 for c in path)
        or path.startswith("/")
        or any(p in ("", ".", "..", ".git") for p in parts)
    ):
        raise PublishError(
            f"path {path!r} is not a plain relative path inside the release (control "
            "character, '..', '.git' or absolute); nothing was published"
        )


def _entries(
    repo: Path, plan: PublishPlan, head: str | None, kept: list[str]
) -> dict[str, tuple[str, str]]:
    """{path: (mode, blob id)} of the release tree: the plan's files as regular files, plus
    the target's kept files (regular files only: never a link or a submodule)."""
    entries: dict[str, tuple[str, str]] = {}
    for f in plan.adds:
        _check_path(f.path)
        oid = _git(repo, "hash-object", "-w", "--stdin", stdin=f.content).stdout.decode().strip()
        entries[f.path] = ("100644", oid)
    if kept and head:
        raw = _git(repo, "ls-tree", "-r", "-z", head, "--", *kept).stdout
        for line in filter(None, raw.split(b"\0")):
            meta, _, name_b = line.partition(b"\t")
            mode, _, oid = meta.decode().split()
            name = name_b.decode("utf-8", "surrogateescape")
            _check_path(name)
            if mode not in ("100644", "100755"):
                raise PublishError(
                    f"{repo}: {name} at the head is not a regular file (mode {mode}: a link or "
                    "submodule); a release holds plain files only; nothing was published"
                )
            entries[name] = (mode, oid)
    return entries


def _verify_tree(repo: Path, tree: str, entries: dict[str, tuple[str, str]]) -> None:
    """The written tree is exactly `entries`, and every file build.json lists hashes to its
    recorded sha256: checked before the branch or the tag moves."""
    raw = _git(repo, "ls-tree", "-r", "-z", tree).stdout
    found: dict[str, tuple[str, str]] = {}
    for line in filter(None, raw.split(b"\0")):
        meta, _, name = line.partition(b"\t")
        mode, _, oid = meta.decode().split()
        found[name.decode("utf-8", "surrogateescape")] = (mode, oid)
    if found != entries:
        odd = sorted(set(found) ^ set(entries)) or sorted(
            p for p in found if found[p] != entries.get(p)
        )
        raise PublishError(
            f"{repo}: the written tree differs from the validated one at "
            f"{', '.join(map(repr, odd[:3]))}; nothing was published"
        )
    blobs = _blobs(repo, [oid for _, oid in found.values()])
    recorded = blobs[found[MANIFEST][1]] if MANIFEST in found else None
    listed = {} if recorded is None else manifest_from_bytes(recorded, f"{repo}:{MANIFEST}").files
    for rel, digest in listed.items():
        data = blobs.get(found[rel][1]) if rel in found else None
        actual = None if data is None else (card_sha256 if rel == README else sha256_bytes)(data)
        if actual != digest:
            raise PublishError(
                f"{repo}: {rel!r} in the written tree does not match {MANIFEST}'s sha256; "
                "nothing was published"
            )


def _blobs(repo: Path, oids: list[str]) -> dict[str, bytes]:
    """{blob id: bytes} read back from the object store (`cat-file --batch`)."""
    out = _git(repo, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode()).stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        head_end = out.index(b"\n", pos)
        oid, _kind, size = out[pos:head_end].decode().split()
        start = head_end + 1
        blobs[oid] = out[start : start + int(size)]
        pos = start + int(size) + 1
    return blobs


def _out_env(repo: Path, env: dict[str, str], *args: str) -> str:
    return _git(repo, *args, env=env).stdout.decode().strip()
