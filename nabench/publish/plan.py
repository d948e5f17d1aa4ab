"""Publish plan: what one release commit adds and deletes, its message and its tag.

The plan is pure: it reads the staged folder (checking every file against `build.json`) and a
description of the target's current state, and returns the operations. Targets (`hub.py`,
`git.py`) fetch that state and apply the plan; `--dry-run` only prints it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nabench.core.card_seal import card_sha256, seal_card, unsealed
from nabench.core.errors import NabenchError
from nabench.core.version import release_version
from nabench.schemas.manifest import (
    MANIFEST,
    Manifest,
    SourceRecord,
    manifest_from_bytes,
    parse_manifest,
)
from nabench.stage.cards import finalize_card
from nabench.stage.croissant import CROISSANT, released_croissant
from nabench.stage.exports import HubData, LmEvalSpec, lm_eval_files
from nabench.validate import validate_path
from nabench.validate.kinds import NA_SIDE_CONFIGS  # no benchmark rows of their own

README = "README.md"
# Files a target keeps although the staged tree lacks them (the Hub creates .gitattributes
# with the repository; deleting it would change how later uploads are stored).
KEEP = frozenset({".gitattributes"})


class PublishError(NabenchError):
    """A release that must not happen (existing tag, moved head, corrupted staged tree)."""


@dataclass(frozen=True)
class RemoteState:
    """What the target holds now: head commit, files at head, tags, and the previous card."""

    head: str | None = None
    files: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()
    readme: str | None = None
    manifest: Manifest | None = None
    known: bool = True  # False for a dry run that did not contact the target


@dataclass(frozen=True)
class PlannedFile:
    path: str
    size: int
    sha256: str
    content: bytes = field(repr=False)
    note: str = ""


@dataclass(frozen=True)
class PublishPlan:
    repo_id: str
    version: str
    tag: str
    commit_message: str
    commit_description: str
    parent_commit: str | None
    adds: tuple[PlannedFile, ...]
    deletes: tuple[str, ...]
    remote_known: bool = True

    def operations(self) -> list[Any]:
        """`huggingface_hub` commit operations: every add, then every delete."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        ops: list[Any] = [
            CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=f.content) for f in self.adds
        ]
        ops.extend(CommitOperationDelete(path_in_repo=p, is_folder=False) for p in self.deletes)
        return ops

    @property
    def tree(self) -> dict[str, str]:
        """{path: sha256} of the files the commit writes."""
        return {f.path: f.sha256 for f in self.adds}

    def render(self) -> str:
        """Human-readable plan (the `--dry-run` output)."""
        lines = [
            f"repo:    {self.repo_id}",
            f"tag:     {self.tag}",
            f"parent:  {self.parent_commit or '(none: first commit)'}",
            f"message: {self.commit_message}",
            "",
            f"{'op':<7} {'size':>12}  {'sha256':<64}  path",
        ]
        for f in self.adds:
            note = f"  ({f.note})" if f.note else ""
            lines.append(f"{'add':<7} {f.size:>12}  {f.sha256}  {f.path}{note}")
        for p in self.deletes:
            lines.append(f"{'delete':<7} {'-':>12}  {'-':<64}  {p}")
        total = sum(f.size for f in self.adds)
        lines.append("")
        lines.append(f"{len(self.adds)} add(s), {len(self.deletes)} delete(s), {total} bytes")
        if not self.remote_known:
            lines.append("target not contacted (dry run): deletions and the previous card unknown")
        return "\n".join(lines)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(staged: Path) -> Manifest:
    """build.json of a staged build, with the bounded loader (one line if it is not one)."""
    path = staged / MANIFEST
    if not path.is_file():
        raise PublishError(f"{staged}: no {MANIFEST} (not a nabench build folder)")
    try:
        manifest = manifest_from_bytes(path.read_bytes(), str(path))
    except NabenchError as exc:
        raise PublishError(str(exc)) from None
    if "files" not in manifest.model_fields_set:
        raise PublishError(f"{path}: lacks the 'files' map of sha256 hashes")
    return manifest


def resolve_version(manifest: Manifest, version: str | None) -> str:
    chosen = version or manifest.recipe_version
    if not chosen:
        raise PublishError("no version: the manifest has no recipe.version; pass --version")
    chosen = str(chosen).removeprefix("v")
    try:
        release_version(chosen)
    except ValueError as exc:
        raise PublishError(str(exc)) from None
    return chosen


def staged_files(staged: Path, manifest: Manifest) -> dict[str, bytes]:
    """Every staged file, checked against the manifest: the tree is exactly what was built."""
    expected = dict(manifest.files)
    found: dict[str, bytes] = {}
    for path in sorted(staged.rglob("*")):
        rel = path.relative_to(staged).as_posix()
        if path.is_symlink():
            raise PublishError(f"{staged}: {rel} is a symlink; a release holds plain files only")
        if path.is_dir():
            continue
        if not path.is_file():  # a FIFO would block the read, a device read without end
            raise PublishError(
                f"{staged}: {rel} is not a regular file; a release holds plain files only"
            )
        if rel == MANIFEST:
            continue
        if rel not in expected:
            raise PublishError(f"{staged}: {rel} is not listed in {MANIFEST}; rebuild or remove it")
        data = path.read_bytes()
        actual = card_sha256(data) if rel == README else sha256_bytes(data)
        if actual != expected[rel]:
            raise PublishError(f"{staged}: {rel} changed after the build (sha256 mismatch)")
        found[rel] = data
    missing = sorted(set(expected) - set(found))
    if missing:
        raise PublishError(f"{staged}: missing file(s) listed in {MANIFEST}: {', '.join(missing)}")
    return found


def check_publishable(staged: Path, manifest: Manifest) -> None:
    """A release holds rows and passes `nabench validate`; anything else is refused."""
    rows = sum(
        n
        for config, per in manifest.counts.items()
        if config not in NA_SIDE_CONFIGS
        for n in per.values()
    )
    if rows == 0:
        raise PublishError(
            f"{staged}: the build holds no benchmark rows (every item excluded?); nothing "
            "was published: check its labels and source, then rebuild"
        )
    report = validate_path(staged)
    if report.violations:
        raise PublishError(
            f"{staged}: fails validation ({len(report.violations)} violation(s), first: "
            f"{report.violations[0]}); nothing was published: run `nabench validate {staged}`"
        )


def make_plan(
    staged: Path,
    repo_id: str,
    *,
    version: str | None = None,
    remote: RemoteState | None = None,
) -> PublishPlan:
    """The release of `staged` on top of `remote` (an empty target when None)."""

    staged = Path(staged)
    remote = remote or RemoteState()
    manifest = read_manifest(staged)
    files = staged_files(staged, manifest)
    check_publishable(staged, manifest)
    version = resolve_version(manifest, version)
    tag = f"v{version}"
    if tag in remote.tags:
        raise PublishError(
            f"tag {tag} already exists on {repo_id}; published versions are immutable "
            "(bump the recipe version or pass --version)"
        )
    notes: dict[str, str] = {}
    if README in files:
        old = unsealed(files[README].decode("utf-8"))
        card = finalize_card(
            old,
            version=version,
            repo_id=repo_id,
            manifest=manifest,
            previous_readme=remote.readme,
            previous_manifest=remote.manifest,
        )
        if card != old:
            files[README] = card.encode("utf-8")
            notes[README] = "card finalized for this release"
    notes.update(_pin_lm_eval_tasks(files, manifest, repo_id, tag))
    notes.update(_release_croissant(files, repo_id, version))
    raw_manifest = (staged / MANIFEST).read_bytes()
    if notes:
        # Only the card's and tasks' hashes change; the rest of the manifest stays as built.
        tasks = _hashes(files, [p for p in notes if p != README])
        card_hash = {README: card_sha256(files[README])} if README in files else {}
        updated = parse_manifest(manifest.record(), MANIFEST)
        updated.files = {**manifest.files, **tasks, **card_hash}
        raw_manifest = updated.to_bytes()
        notes[MANIFEST] = f"hash(es) of {', '.join(sorted(notes))} updated"
        if README in files:
            files[README] = seal_card(files[README].decode("utf-8"), raw_manifest).encode("utf-8")
    files[MANIFEST] = raw_manifest
    adds = tuple(
        PlannedFile(p, len(data), sha256_bytes(data), data, notes.get(p, ""))
        for p, data in sorted(files.items())
    )
    deletes = tuple(sorted(p for p in remote.files if p not in files and p not in KEEP))
    message = (
        f"Release {tag}: {manifest.recipe.get('name', staged.name)} "
        f"(nabench {manifest.nabench_version or '?'})"
    )
    return PublishPlan(
        repo_id=repo_id,
        version=version,
        tag=tag,
        commit_message=message,
        commit_description=_description(manifest, adds, deletes),
        parent_commit=remote.head,
        adds=adds,
        deletes=deletes,
        remote_known=remote.known,
    )


def _pin_lm_eval_tasks(
    files: dict[str, bytes], manifest: Manifest, repo_id: str, tag: str
) -> dict[str, str]:
    """Rewrite the build's lm-eval tasks to read `repo_id` at `tag` instead of local paths."""
    if not manifest.lm_eval:
        return {}
    pinned = lm_eval_files(LmEvalSpec.from_manifest(manifest), HubData(repo_id, tag))
    changed = {p: data for p, data in pinned.items() if files.get(p) != data}
    files.update(changed)
    return {p: f"lm-eval task pinned to {repo_id}@{tag}" for p in changed}


def _release_croissant(files: dict[str, bytes], repo_id: str, version: str) -> dict[str, str]:
    """croissant.json names the repository and the version it is released as."""
    if CROISSANT not in files:
        return {}
    data = released_croissant(files[CROISSANT], repo_id, version)
    if data == files[CROISSANT]:
        return {}
    files[CROISSANT] = data
    return {CROISSANT: f"croissant.json: url and version of {repo_id} v{version}"}


def _hashes(files: Mapping[str, bytes], paths: Iterable[str]) -> dict[str, str]:
    return {p: sha256_bytes(files[p]) for p in paths}


def _description(manifest: Manifest, adds: Iterable[PlannedFile], deletes: Iterable[str]) -> str:
    source = manifest.source or SourceRecord()
    lines = [
        f"seed {manifest.seed}, source {source.dataset} ({source.location})",
        *(
            f"{cfg}: " + ", ".join(f"{s}={n}" for s, n in per.items())
            for cfg, per in manifest.counts.items()
        ),
        f"{len(list(adds))} file(s) written, {len(list(deletes))} deleted",
    ]
    return "\n".join(lines)


def parse_target(to: str) -> tuple[str, str]:
    """`git:PATH` -> ("git", PATH); `hub` or `hub:` -> ("hub", "")."""
    kind, _, rest = to.partition(":")
    if kind == "git" and rest:
        return "git", rest
    if kind == "hub" and not rest:
        return "hub", ""
    raise PublishError(f"unknown target {to!r}: use git:PATH (or hub)")
