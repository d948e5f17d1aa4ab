"""Staging: parquet files are written in the background, but `out` only ever holds a whole
build — a failed validation or an error leaves the previous build and no temp folders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nabench.core.errors import ValidationFailed
from nabench.perturb.na_keyed import NAKeyed
from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.schemas.manifest import Manifest
from nabench.stage.hub_layout import StagedTable, StagingArea


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_staging_area_commits_whole_tree_with_hashes(tmp_path: Path) -> None:
    out = tmp_path / "repo"
    tables = [
        StagedTable(f"cfg{i}", "test", pa.table({"id": [f"x/{j}" for j in range(50)]}))
        for i in range(6)
    ]
    with StagingArea(out) as area:
        for st in tables:
            area.add(st)
        card = lambda configs, infos: f"{len(configs)} configs\n"  # noqa: E731
        hashes = area.commit(card, Manifest.model_validate({"k": 1}))
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["k"] == 1
    # The card is sealed with build.json's digest (a front-matter line), hashed without it.
    digest = hashlib.sha256((out / "build.json").read_bytes()).hexdigest()
    assert (
        out / "README.md"
    ).read_text() == f"---\nnabench_build_sha256: {digest}\n---\n6 configs\n"
    assert manifest["files"]["README.md"] == hashlib.sha256(b"6 configs\n").hexdigest()
    for st in tables:
        path = out / st.relpath
        assert pq.read_table(path).column("id").to_pylist() == st.table.column("id").to_pylist()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert hashes[st.relpath] == manifest["files"][st.relpath] == digest
    assert _leftovers(tmp_path) == []


def test_staging_area_without_commit_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "repo"
    with pytest.raises(RuntimeError), StagingArea(out) as area:
        area.add(StagedTable("cfg", "test", pa.table({"id": ["a", "b"]})))
        raise RuntimeError("validation failed")
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_staging_area_refuses_a_file_twice(tmp_path: Path) -> None:
    with StagingArea(tmp_path / "repo") as area:
        area.add(StagedTable("cfg", "test", pa.table({"id": ["a"]})))
        with pytest.raises(ValueError, match="staged twice"):
            area.add(StagedTable("cfg", "test", pa.table({"id": ["b"]})))


def test_failed_validation_keeps_previous_build(
    mmlu_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = load_recipe("mmlu-na")
    out = tmp_path / "mmlu-na"
    options = BuildOptions(source=str(mmlu_dir), out=out, labels="none", limit=200, progress=False)
    build(recipe, options)
    before = _tree(out)

    real_build = NAKeyed.build

    def off_by_one(self: NAKeyed, items, seed):  # type: ignore[no-untyped-def]
        table = real_build(self, items, seed)
        shifted = pa.array([(a + 1) % 4 for a in table.column("answer").to_pylist()], pa.int64())
        return table.set_column(table.schema.get_field_index("answer"), "answer", shifted)

    monkeypatch.setattr(NAKeyed, "build", off_by_one)
    with pytest.raises(ValidationFailed, match="na_keyed_key_is_na"):
        build(recipe, BuildOptions(source=str(mmlu_dir), out=out, labels="none", progress=False))
    assert _tree(out) == before  # the earlier, valid build is untouched
    assert _leftovers(tmp_path) == []


def test_atomic_file_replaces_only_on_success(tmp_path: Path) -> None:
    from nabench.core.atomic import atomic_file

    target = tmp_path / "sub" / "out.json"
    with atomic_file(target) as tmp:
        tmp.write_text("first")
    assert target.read_text() == "first"
    with pytest.raises(RuntimeError), atomic_file(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]
