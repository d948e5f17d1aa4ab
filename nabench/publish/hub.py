"""Push a plan to the Hugging Face Hub: create_repo, one create_commit on the head, create_tag.

The token is never read, printed, logged or stored here: `HfApi` finds it itself
(`HF_TOKEN` or the `huggingface-cli login` file).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nabench.publish.plan import MANIFEST, README, PublishError, PublishPlan, RemoteState, make_plan
from nabench.publish.preflight import hub_error
from nabench.schemas.manifest import previous_manifest

REPO_TYPE = "dataset"
BRANCH = "main"


@dataclass(frozen=True)
class PushResult:
    repo_id: str
    tag: str
    commit: str
    commit_url: str
    plan: PublishPlan


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def remote_state(api: Any, repo_id: str) -> RemoteState:
    """Head of `main`, its files, the tags, and the previous card and manifest (if any)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    except RepositoryNotFoundError:
        return RemoteState()
    head = next((b.target_commit for b in refs.branches if b.name == BRANCH), None)
    tags = frozenset(t.name for t in refs.tags)
    if head is None:
        return RemoteState(tags=tags)
    files = tuple(api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=head))

    def fetch(name: str) -> str | None:
        if name not in files:
            return None
        path = api.hf_hub_download(repo_id, name, repo_type=REPO_TYPE, revision=head)
        return Path(path).read_text(encoding="utf-8")

    manifest = previous_manifest(fetch(MANIFEST), f"{repo_id}:{MANIFEST}")
    return RemoteState(head, files, tags, fetch(README), manifest)


def push(
    staged: Path,
    repo_id: str,
    *,
    version: str | None = None,
    private: bool = False,
    api: Any = None,
) -> PushResult:
    """Publish `staged` as release `v<version>` of the dataset repository `repo_id`.

    Refuses (PublishError) when the tag exists or the branch head moves during the push;
    a published tag is never moved or overwritten. Any other Hub failure (HTTP status,
    network) is one PublishError line naming the step and the fix.
    """
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = api if api is not None else HfApi()
    endpoint = str(getattr(api, "endpoint", "the Hub"))
    step = f"creating {repo_id}"
    try:
        api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=True, private=private)
        step = f"reading the state of {repo_id}"
        state = remote_state(api, repo_id)
        plan = make_plan(staged, repo_id, version=version, remote=state)
        step = f"committing to {repo_id}"
        info = _commit(api, repo_id, plan)
        step = f"reading back commit {info.oid} of {repo_id}"
        _check_committed(api, repo_id, plan, info.oid)  # a tag names only the validated tree
        step = f"tagging {info.oid} as {plan.tag} on {repo_id}"
        _tag(api, repo_id, plan, info.oid)
    except (HfHubHTTPError, httpx2.TransportError, OSError) as exc:
        raise hub_error(exc, endpoint, step) from None
    return PushResult(repo_id, plan.tag, info.oid, str(info.commit_url), plan)


def _commit(api: Any, repo_id: str, plan: PublishPlan) -> Any:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return api.create_commit(
            repo_id,
            operations=plan.operations(),
            commit_message=plan.commit_message,
            commit_description=plan.commit_description,
            repo_type=REPO_TYPE,
            revision=BRANCH,
            parent_commit=plan.parent_commit,
        )
    except HfHubHTTPError as exc:
        if _status(exc) in {409, 412}:
            raise PublishError(
                f"{repo_id}: the head of {BRANCH} moved since {plan.parent_commit} "
                f"(someone else committed); nothing was published, re-run to plan again"
            ) from None
        raise


def _git_blob_id(data: bytes) -> str:
    """The git object id of a file's bytes (what the Hub reports for a non-LFS file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _check_committed(api: Any, repo_id: str, plan: PublishPlan, oid: str) -> None:
    """The commit holds every planned file with exactly its bytes (LFS sha256 or git blob id)
    and none the plan deleted; otherwise it stays untagged and publish says so."""
    from huggingface_hub.hf_api import RepoFile

    listed = api.list_repo_tree(repo_id, recursive=True, revision=oid, repo_type=REPO_TYPE)
    tree = {f.path: f for f in listed if isinstance(f, RepoFile)}
    for planned in plan.adds:
        got = tree.get(planned.path)
        if got is None:
            wrong = "is missing"
        elif got.lfs is not None:
            sha = planned.sha256  # the plan's own hash of these bytes (sha256_bytes)
            wrong = "" if got.lfs.sha256 == sha else f"has LFS sha256 {got.lfs.sha256}"
        else:
            blob = _git_blob_id(planned.content)
            wrong = "" if got.blob_id == blob else f"has blob {got.blob_id}, not {blob}"
        if wrong:
            raise PublishError(
                f"{repo_id}: {planned.path} {wrong} in commit {oid}: not the validated file; "
                f"the commit is on {BRANCH} untagged, nothing was released"
            )
    left = sorted(set(plan.deletes) & set(tree))
    if left:
        raise PublishError(
            f"{repo_id}: commit {oid} still holds {left[0]}, which the release deletes; "
            f"the commit is on {BRANCH} untagged, nothing was released"
        )


def _tag(api: Any, repo_id: str, plan: PublishPlan, oid: str) -> None:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_tag(
            repo_id,
            tag=plan.tag,
            tag_message=plan.commit_message,
            revision=oid,
            repo_type=REPO_TYPE,
        )
    except HfHubHTTPError as exc:
        if _status(exc) == 409:
            raise PublishError(
                f"{repo_id}: tag {plan.tag} was created by someone else meanwhile; commit "
                f"{oid} is on {BRANCH} but untagged"
            ) from None
        raise PublishError(
            f"{repo_id}: tagging {oid} as {plan.tag} failed (HTTP {_status(exc)}); the commit "
            f"is on {BRANCH} untagged: tag it with `hf repo tag create` or re-run"
        ) from None
