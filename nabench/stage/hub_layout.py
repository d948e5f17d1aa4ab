"""Stage a build as a Hugging Face Hub dataset repository tree, atomically.

Layout (what `push_to_hub` writes and `load_dataset` reads):
    <config>/<split>-00000-of-00001.parquet
    README.md      YAML front matter (`configs`, `dataset_info`, card metadata) + card body
    build.json     manifest: recipe, versions, seed, counts, sha256 of every other file
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.schemas.tables import features_for

MANIFEST = "build.json"


def split_filename(split: str) -> str:
    return f"{split}-00000-of-00001.parquet"


@dataclass(frozen=True)
class StagedTable:
    config: str
    split: str
    table: pa.Table

    @property
    def relpath(self) -> str:
        return f"{self.config}/{split_filename(self.split)}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_parquet(table: pa.Table, path: Path) -> None:
    """Deterministic parquet with the `huggingface` features metadata (same input -> same bytes)."""
    schema = features_for(table.schema).arrow_schema
    pq.write_table(
        table.cast(schema),
        path,
        compression="snappy",  # what `push_to_hub` writes; zstd costs ~2x the time
        row_group_size=100_000,
        write_statistics=True,
        store_schema=True,
    )


def _write_tables(root: Path, tables: list[StagedTable]) -> dict[str, str]:
    """Write every parquet file, in threads (Arrow's writer releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    def write_one(st: StagedTable) -> tuple[str, str]:
        target = root / st.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        write_parquet(st.table, target)
        return st.relpath, sha256_file(target)

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return dict(pool.map(write_one, tables))


def hub_metadata(tables: list[StagedTable]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`configs` and `dataset_info` front-matter entries, built from the same tables."""
    configs: dict[str, list[dict[str, str]]] = {}
    infos: dict[str, dict[str, Any]] = {}
    for st in tables:
        configs.setdefault(st.config, []).append({"split": st.split, "path": st.relpath})
        info = infos.setdefault(
            st.config,
            {
                "config_name": st.config,
                "features": features_for(st.table.schema)._to_yaml_list(),
                "splits": [],
                "dataset_size": 0,
            },
        )
        info["splits"].append(
            {"name": st.split, "num_bytes": int(st.table.nbytes), "num_examples": st.table.num_rows}
        )
        info["dataset_size"] += int(st.table.nbytes)
    config_list = [{"config_name": name, "data_files": files} for name, files in configs.items()]
    return config_list, list(infos.values())


def stage(
    out: Path,
    tables: list[StagedTable],
    render_readme: Callable[[list[dict[str, Any]], list[dict[str, Any]]], str],
    manifest: Mapping[str, Any],
) -> dict[str, str]:
    """Write the repository tree into a temp folder beside `out`, then swap it into place.

    A killed build leaves either the previous complete folder or the new one, never a mix.
    Returns {relative path: sha256} of the data files and README.
    """
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes 0700; a published tree is world-readable
    try:
        hashes = _write_tables(tmp, tables)
        configs, infos = hub_metadata(tables)
        (tmp / "README.md").write_text(render_readme(configs, infos), encoding="utf-8")
        hashes["README.md"] = sha256_file(tmp / "README.md")
        full_manifest = {**manifest, "files": dict(sorted(hashes.items()))}
        (tmp / MANIFEST).write_text(
            json.dumps(full_manifest, indent=2, sort_keys=False, default=str) + "\n",
            encoding="utf-8",
        )
        swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return hashes


def swap_into_place(tmp: Path, out: Path) -> None:
    """Replace `out` by `tmp` with renames only (atomic on one filesystem)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / "tree")
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)
