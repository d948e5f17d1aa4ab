"""Stage a build as a Hugging Face Hub dataset repository tree, atomically.

Layout (what `push_to_hub` writes and `load_dataset` reads):
    <config>/<split>-00000-of-00001.parquet
    README.md      YAML front matter (`configs`, `dataset_info`, card metadata) + card body
    build.json     manifest: recipe, versions, seed, counts, sha256 of every other file
    croissant.json Croissant metadata with the Responsible-AI fields (`stage.croissant`)
    lm_eval/       lm-eval tasks of the multiple-choice configs (reading this folder's files
                   by absolute path; `publish` pins them to the release), listed in the card
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.core.card_seal import card_sha256, seal_card, unsealed
from nabench.core.out_guard import OutLock, check_out, check_parents, remove_stale, say
from nabench.core.portable import portable_text, portable_tree
from nabench.core.redact import redact, scrub
from nabench.core.version import __version__
from nabench.schemas.manifest import MANIFEST, Manifest, parse_manifest
from nabench.schemas.tables import features_for
from nabench.stage.cards.front_matter import split_front_matter
from nabench.stage.croissant import CROISSANT, CardFacts, croissant_json
from nabench.stage.exports.lm_eval_tasks import (
    LmEvalSpec,
    LocalData,
    lm_eval_card_section,
    lm_eval_files,
)

WRITERS = min(4, os.cpu_count() or 1)  # StagingArea's background parquet writers


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


# Free text and ids are (nearly) unique per row: parquet's dictionary attempt on them costs
# ~12% of a full MMLU write and falls back to plain encoding anyway, and min/max statistics
# of free text help no reader. Every other column (provenance, categories, numbers) keeps
# the default dictionary encoding and statistics.
PLAIN_COLUMNS = frozenset(
    {
        "id",
        "item_id",
        "task_id",
        "question",
        "choices",
        "original_choices",
        "prompt",
        "target",
        "task",
        "analysis",
        "raw_output",
        "rationale",
        "detail",
        "inserted_question",
        "inferred_question",
        "prompt_sha256",
    }
)


def write_parquet(table: pa.Table, path: Path) -> str:
    """Deterministic parquet with the `huggingface` features metadata (same input -> same bytes).

    Returns the file's sha256, computed from the bytes in memory before they are written.
    """
    schema = features_for(table.schema).arrow_schema
    structured = [c for c in schema.names if c not in PLAIN_COLUMNS]
    sink = pa.BufferOutputStream()
    pq.write_table(
        table.cast(schema),
        sink,
        # zstd level 1: the CPU time of snappy (what `push_to_hub` writes) with files ~35%
        # smaller (full mmlu-na: 19.9 MB instead of 30.9 MB); every parquet reader has it.
        compression="zstd",
        compression_level=1,
        row_group_size=100_000,
        use_dictionary=structured,
        write_statistics=structured,
        store_schema=True,
    )
    data = sink.getvalue()
    path.write_bytes(memoryview(data))
    return hashlib.sha256(memoryview(data)).hexdigest()


def _write_one(st: StagedTable, target: Path) -> tuple[str, str]:
    return st.relpath, write_parquet(st.table, target)


class StagingArea:
    """A temp folder beside `out` that parquet files are written into while the build goes on.

    `add` hands a table to a background writer (Arrow's writer and hashlib release the GIL,
    so writing overlaps the next perturbation and the validation). `commit` waits for the
    files, adds README.md and build.json and swaps the folder into place; leaving the `with`
    block without a commit (an error, a failed validation, Ctrl-C) deletes the temp folder,
    so `out` holds either the previous complete build or the new one, never a mix.
    """

    def __init__(self, out: Path, workers: int | None = None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.out = Path(out).expanduser().absolute()
        check_parents(self.out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out = self.out.parent.resolve() / self.out.name
        # One build per target at a time; then refuse to replace anything a build did not
        # write, before a byte is written. Temp folders a killed build left are collected.
        self._lock = OutLock(self.out)
        self._lock.acquire()
        try:
            # Collected first: an interrupted swap's previous tree is restored, then checked.
            for stale in remove_stale(self.out):
                say(f"removed {stale.name}, left behind by an interrupted build of {self.out}")
            self.previous = check_out(self.out)
            self.root = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.tmp-", dir=self.out.parent))
        except BaseException:
            self._lock.release()
            raise
        self.root.chmod(0o755)  # mkdtemp makes 0700; a published tree is world-readable
        self.tables: list[StagedTable] = []
        self._pool = ThreadPoolExecutor(max_workers=workers or WRITERS)
        self._writes: list[Any] = []
        self._folders: list[str] = []
        self._committed = False

    def __enter__(self) -> StagingArea:
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self._writes:
            future.cancel()
        self._pool.shutdown(wait=True)
        try:
            if not self._committed:
                shutil.rmtree(self.root, ignore_errors=True)
        finally:
            self._lock.release()

    def add(self, st: StagedTable) -> None:
        if any(t.relpath == st.relpath for t in self.tables):
            raise ValueError(f"{st.relpath} is staged twice")
        self.tables.append(st)
        target = self.root / st.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        self._writes.append(self._pool.submit(_write_one, st, target))

    def folder(self, rel: str) -> Path:
        """A folder of the tree for files a step writes itself (a report); every file in it
        is hashed into build.json at commit, so publish and validate cover it."""
        path = self.root / rel
        path.mkdir(parents=True, exist_ok=True)
        self._folders.append(rel)
        return path

    def _folder_hashes(self) -> dict[str, str]:
        return {
            path.relative_to(self.root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for rel in self._folders
            for path in sorted((self.root / rel).rglob("*"))
            if path.is_file()
        }

    def commit(
        self,
        render_readme: Callable[[list[dict[str, Any]], list[dict[str, Any]]], str],
        manifest: Manifest,
        facts: CardFacts | None = None,
        *,
        lm_eval: bool = False,
    ) -> dict[str, str]:
        """Finish the tree and swap it into place; returns {relative path: sha256}.

        `facts`: what the card states beyond the manifest, for croissant.json; `lm_eval`:
        also write lm-eval tasks of the multiple-choice tables (the NA builds)."""
        configs, infos = hub_metadata(self.tables)
        # Credentials (key-like options, `user:key@` URLs) never reach a written file: masked
        # in the manifest, and any value masked there is scrubbed from the card too.
        clean = redact(manifest.record())
        # Nor does a path of this machine: relative to the build, or `local:<name>`.
        local = portable_tree(clean.value, self.out)
        written = parse_manifest(local.value, MANIFEST)
        spec = lm_eval_spec(self.tables, written) if lm_eval else None
        readme_text = render_readme(configs, infos)  # while the writers finish
        if spec is not None:
            readme_text += lm_eval_card_section(spec)
        readme_text = portable_text(scrub(readme_text, clean.secrets), local.replaced, self.out)
        readme = unsealed(readme_text)
        extra = {} if spec is None else lm_eval_files(spec, LocalData(self.out, relative=True))
        hashes = dict(future.result() for future in self._writes)
        hashes.update(self._folder_hashes())
        for rel, data in extra.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_bytes(data)
            hashes[rel] = hashlib.sha256(data).hexdigest()
        front, _ = split_front_matter(readme)
        # From the portable manifest, and free text (the facts) scrubbed like the card.
        croissant = croissant_json(self.tables, written, hashes, front, facts)
        croissant = portable_text(croissant.decode("utf-8"), local.replaced, self.out).encode()
        (self.root / CROISSANT).write_bytes(croissant)
        hashes[CROISSANT] = hashlib.sha256(croissant).hexdigest()
        hashes["README.md"] = card_sha256(readme.encode("utf-8"))
        written.files = dict(sorted(hashes.items()))
        if spec is not None:
            written.lm_eval = spec.to_json()
        raw_manifest = written.to_bytes()
        (self.root / MANIFEST).write_bytes(raw_manifest)
        # The card names build.json's digest, so the manifest is covered too (core.card_seal).
        (self.root / "README.md").write_bytes(seal_card(readme, raw_manifest).encode("utf-8"))
        swap_into_place(self.root, self.out)
        self._committed = True
        if self.previous is not None:
            say(f"replaced the previous build in {self.out}: {self.previous.describe()}")
        return hashes


def lm_eval_spec(tables: Sequence[StagedTable], manifest: Manifest) -> LmEvalSpec | None:
    """The lm-eval tasks of a build's multiple-choice tables, named after the recipe (None
    for a manifest without a recipe name and version)."""
    name, version = manifest.recipe_name, manifest.recipe_version
    if not name or not version:
        return None
    return LmEvalSpec.from_tables(
        name, version, ((t.config, t.split, t.table.schema.names) for t in tables)
    )


def row_counts(tables: Sequence[StagedTable]) -> dict[str, dict[str, int]]:
    """{config: {split: rows}} of the staged tables, in staging order."""
    counts: dict[str, dict[str, int]] = {}
    for st in tables:
        counts.setdefault(st.config, {})[st.split] = st.table.num_rows
    return counts


def manifest_header(kind: str, recipe: Any, seed: int) -> dict[str, Any]:
    """The first keys of every build.json: what built it, from which recipe and seed."""

    return {
        "nabench_version": __version__,
        "python": platform.python_version(),
        "kind": kind,
        "recipe": recipe.model_dump(mode="json"),
        "seed": seed,
    }


def source_section(
    source: Any, recipe: Any, location: str | None, splits: Mapping[str, Any]
) -> dict[str, Any]:
    """build.json's `source`: which dataset, where it was read from, and per split what."""
    return {
        "dataset": source.name,
        "location": location or source.hub_id,
        "config": recipe.source.config or source.default_config,
        "revision": recipe.source.revision,
        "splits": splits,
    }


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


def swap_into_place(tmp: Path, out: Path) -> None:
    """Replace `out` by `tmp` with renames only (atomic on one filesystem)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / "tree")
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)
