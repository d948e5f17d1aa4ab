"""The Hub push against the real `HfApi` signatures (autospec), plus a live test when configured."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any
from unittest.mock import create_autospec

import httpx2
import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.hf_api import CommitInfo, GitRefInfo, GitRefs, RepoFile

from nabench.core.card_seal import card_digest, unsealed
from nabench.publish import PublishError
from nabench.publish.hub import push
from nabench.stage.cards import parse_changelog, split_front_matter

REPO_ID = "org/mmlu-na"
HEAD = "a" * 40
NEW = "b" * 40
PREVIOUS_CARD = """---
license: mit
paperswithcode_id: mmlu-na-example
tags:
- nabench
- hand-added-tag
configs:
- config_name: old_config
  data_files:
  - split: test
    path: old_config/test-00000-of-00001.parquet
---

# previous card

## Changelog

<!-- nabench:changelog:start -->
### v0.9.0

- An earlier release.
<!-- nabench:changelog:end -->
"""


def hub_api(tmp_path: Path, *, tags: tuple[str, ...] = ()) -> Any:
    api = create_autospec(HfApi, instance=True)
    api.list_repo_refs.return_value = GitRefs(
        branches=[GitRefInfo(name="main", ref="refs/heads/main", target_commit=HEAD)],
        converts=[],
        tags=[GitRefInfo(name=t, ref=f"refs/tags/{t}", target_commit=HEAD) for t in tags],
    )
    api.list_repo_files.return_value = [
        ".gitattributes",
        "README.md",
        "old_config/test-00000-of-00001.parquet",
    ]
    previous = tmp_path / "previous-README.md"
    previous.write_text(PREVIOUS_CARD)

    def download(repo_id: str, filename: str, **kwargs: Any) -> str:
        assert kwargs["revision"] == HEAD and kwargs["repo_type"] == "dataset"
        assert filename == "README.md"
        return str(previous)

    api.hf_hub_download.side_effect = download
    committed: dict[str, bytes] = {}  # what this fake Hub stores: the commit's own bytes

    def commit(repo_id: str, **kwargs: Any) -> CommitInfo:
        for op in kwargs["operations"]:
            if isinstance(op, CommitOperationAdd):
                committed[op.path_in_repo] = op.path_or_fileobj
            else:
                committed[op.path_in_repo] = b""  # marked deleted below
        return CommitInfo(
            commit_url=f"https://huggingface.co/datasets/{REPO_ID}/commit/{NEW}",
            commit_message="m",
            commit_description="",
            oid=NEW,
        )

    def tree(repo_id: str, **kwargs: Any) -> list[RepoFile]:
        """The tree at the commit, as the Hub lists it: parquet in LFS (sha256), the rest as
        git blobs (sha1 of the git object), written out here from the bytes committed."""
        assert kwargs["revision"] == NEW and kwargs["recursive"]
        deleted = {op.path_in_repo for op in api.create_commit.call_args.kwargs["operations"]
                   if isinstance(op, CommitOperationDelete)}  # fmt: skip
        files = {p: b"kept" for p in api.list_repo_files.return_value if p not in deleted}
        files.update({p: d for p, d in committed.items() if p not in deleted})
        out = []
        for path, data in files.items():
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            lfs = None
            if path.endswith(".parquet"):
                sha = hashlib.sha256(data).hexdigest()
                lfs = {"size": len(data), "oid": sha, "pointerSize": 130}
            out.append(RepoFile(path=path, size=len(data), oid=blob, lfs=lfs))
        return out

    api.create_commit.side_effect = commit
    api.list_repo_tree.side_effect = tree
    api.committed = committed
    return api


def test_push_commits_on_head_then_tags(staged_v1: Path, tmp_path: Path) -> None:
    api = hub_api(tmp_path)
    result = push(staged_v1, REPO_ID, private=True, api=api)

    api.create_repo.assert_called_once_with(
        REPO_ID, repo_type="dataset", exist_ok=True, private=True
    )
    api.create_commit.assert_called_once()
    kwargs = api.create_commit.call_args.kwargs
    assert kwargs["parent_commit"] == HEAD
    assert kwargs["revision"] == "main" and kwargs["repo_type"] == "dataset"
    assert kwargs["commit_message"].startswith("Release v1.0.0: mmlu-na")
    ops = list(kwargs["operations"])
    adds = {op.path_in_repo: op for op in ops if isinstance(op, CommitOperationAdd)}
    deletes = [op.path_in_repo for op in ops if isinstance(op, CommitOperationDelete)]
    staged = {p.relative_to(staged_v1).as_posix() for p in staged_v1.rglob("*") if p.is_file()}
    assert set(adds) == staged
    assert deletes == ["old_config/test-00000-of-00001.parquet"]  # .gitattributes is kept
    for path, op in adds.items():
        data = op.path_or_fileobj
        assert isinstance(data, bytes)
        if path.endswith(".parquet"):
            assert data == (staged_v1 / path).read_bytes()
    api.create_tag.assert_called_once_with(
        REPO_ID,
        tag="v1.0.0",
        tag_message=kwargs["commit_message"],
        revision=NEW,
        repo_type="dataset",
    )
    assert result.commit == NEW and result.tag == "v1.0.0"

    # The previous card's metadata is merged (hand-added keys survive) and its changelog kept.
    card = adds["README.md"].path_or_fileobj.decode()  # type: ignore[union-attr]
    meta, _ = split_front_matter(card)
    assert meta["paperswithcode_id"] == "mmlu-na-example"
    assert "hand-added-tag" in meta["tags"] and "none-of-the-above" in meta["tags"]
    assert next(c["config_name"] for c in meta["configs"]) == "original"
    assert "old_config" not in {c["config_name"] for c in meta["configs"]}
    assert list(parse_changelog(card)) == ["1.0.0", "0.9.0"]
    manifest = adds["build.json"].path_or_fileobj.decode()  # type: ignore[union-attr]
    # the finalized card is hashed without its seal, and re-sealed with the new build.json
    assert hashlib.sha256(unsealed(card).encode()).hexdigest() in manifest
    assert card_digest(card) == hashlib.sha256(manifest.encode()).hexdigest()


def test_existing_tag_is_refused(staged_v1: Path, tmp_path: Path) -> None:
    api = hub_api(tmp_path, tags=("v1.0.0",))
    with pytest.raises(PublishError, match=r"tag v1\.0\.0 already exists"):
        push(staged_v1, REPO_ID, api=api)
    api.create_commit.assert_not_called()
    api.create_tag.assert_not_called()


def test_moved_head_is_refused(staged_v1: Path, tmp_path: Path) -> None:
    api = hub_api(tmp_path)
    request = httpx2.Request("POST", f"https://huggingface.co/api/datasets/{REPO_ID}/commit/main")
    api.create_commit.side_effect = HfHubHTTPError(
        "412 Precondition Failed", response=httpx2.Response(412, request=request)
    )
    with pytest.raises(PublishError, match="head of main moved"):
        push(staged_v1, REPO_ID, api=api)
    api.create_tag.assert_not_called()


def test_version_override_and_semver(staged_v1: Path, tmp_path: Path) -> None:
    api = hub_api(tmp_path)
    push(staged_v1, REPO_ID, version="2.0.0", api=api)
    assert api.create_tag.call_args.kwargs["tag"] == "v2.0.0"
    card = next(
        op.path_or_fileobj
        for op in api.create_commit.call_args.kwargs["operations"]
        if op.path_in_repo == "README.md"
    )
    assert b'revision="v2.0.0"' in card
    with pytest.raises(PublishError, match="not semantic"):
        push(staged_v1, REPO_ID, version="2.0", api=hub_api(tmp_path))


def test_modified_staged_tree_is_refused(staged_v1: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(staged_v1, copy)
    target = copy / "na_keyed" / "test-00000-of-00001.parquet"
    target.write_bytes(target.read_bytes() + b"x")
    api = hub_api(tmp_path)
    with pytest.raises(PublishError, match="changed after the build"):
        push(copy, REPO_ID, api=api)
    api.create_commit.assert_not_called()


@pytest.mark.skipif(
    not (os.environ.get("NABENCH_HUB_ENDPOINT") and os.environ.get("HF_TOKEN")),
    reason="live Hub test needs NABENCH_HUB_ENDPOINT and HF_TOKEN",
)
def test_live_hub_release(staged_v1: Path) -> None:
    api = HfApi(endpoint=os.environ["NABENCH_HUB_ENDPOINT"])
    owner = api.whoami()["name"]
    repo_id = f"{owner}/nabench-test-{uuid.uuid4().hex[:8]}"
    try:
        result = push(staged_v1, repo_id, private=True, api=api)
        refs = api.list_repo_refs(repo_id, repo_type="dataset")
        assert {t.name: t.target_commit for t in refs.tags} == {"v1.0.0": result.commit}
        files = set(api.list_repo_files(repo_id, repo_type="dataset", revision="v1.0.0"))
        assert set(result.plan.tree) <= files
        with pytest.raises(PublishError, match="already exists"):
            push(staged_v1, repo_id, api=api)
    finally:
        api.delete_repo(repo_id, repo_type="dataset", missing_ok=True)


@pytest.mark.parametrize("target", ["README.md", "original/test-00000-of-00001.parquet"])
def test_a_commit_whose_tree_is_not_the_validated_one_is_not_tagged(
    staged_v1: Path, tmp_path: Path, target: str
) -> None:
    """Issue 24: publishing commits exactly the validated tree. The Hub is read back after
    the commit; a file it holds with other bytes (a git blob or an LFS object) leaves the
    commit untagged and publish says so."""
    api = hub_api(tmp_path)
    commit = api.create_commit.side_effect

    def corrupting(repo_id: str, **kwargs: Any) -> CommitInfo:
        info = commit(repo_id, **kwargs)
        api.committed[target] = b"other bytes"
        return info

    api.create_commit.side_effect = corrupting
    with pytest.raises(PublishError, match=rf"{target} has .* not the validated file; the "
                       "commit is on main untagged"):  # fmt: skip
        push(staged_v1, REPO_ID, api=api)
    api.create_tag.assert_not_called()
