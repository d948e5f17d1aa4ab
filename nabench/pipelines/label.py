"""`nabench label`: load a recipe's eligible items, label them, write parquet + summary JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.audit.eligibility import audit_items
from nabench.core.atomic import atomic_file
from nabench.core.errors import NabenchError
from nabench.core.out_guard import (
    OutFile,
    beside,
    check_cache,
    check_file,
    json_with,
    parquet_with,
)
from nabench.label.guideline import load_guideline
from nabench.label.labeler import label_items
from nabench.llm import ResponseCache, write_json_atomic
from nabench.llm.options import ModelFlags, open_backend
from nabench.pipelines.na import inserted_texts, make_builders
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, load_split
from nabench.sources import get_source


def eligible_items(recipe: Any, options: BuildOptions) -> pa.Table:
    """The items a build of `recipe` would label: every split, after the eligibility audit."""
    source = get_source(recipe.source.dataset)
    builders = make_builders(recipe)
    na = inserted_texts(builders, "has_none_option")
    aota = inserted_texts(builders, "has_all_option")
    location = options.source or recipe.source.hub_id
    tables = []
    for split in options.splits or recipe.source.splits:
        loaded = load_split(source, recipe, location, split, recipe.source.config, recipe.seed)
        items = loaded.items if options.limit is None else loaded.items.slice(0, options.limit)
        excluded = getattr(recipe, "exclude_subjects", ())  # no label calls for left-out subjects
        tables.append(audit_items(items, na, aota, exclude_subjects=excluded).eligible)
    return pa.concat_tables(tables)


_LABEL_COLUMNS = {"id", "na_applicable", "guideline_version", "prompt_sha256", "raw_output"}
_SUMMARY_KEYS = {"recipe", "guideline_version", "applicable", "not_applicable"}


LABELS_OUT = OutFile(
    "`nabench label`",
    ".parquet",
    parquet_with(_LABEL_COLUMNS),
    ((".summary.json", json_with(_SUMMARY_KEYS)),),
)


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    with atomic_file(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def run_label_command(
    recipe_name: str,
    *,
    source: str | None,
    splits: Sequence[str],
    limit: int | None,
    guideline: str | None,
    max_attempts: int,
    max_tokens: int,
    model_flags: ModelFlags,
    out: Path,
    progress: bool,
    chunk_size: int = 16,
) -> dict[str, Any]:
    check_file(out, LABELS_OUT)  # before any request is sent
    check_cache(model_flags.cache_path(), out, LABELS_OUT)
    recipe = load_recipe(recipe_name)
    if getattr(recipe, "kind", "na") != "na":
        raise NabenchError(f"recipe {recipe.name} is not an NA recipe; nothing to label")
    spec = recipe.labels.llm
    guide = load_guideline(guideline or (spec.guideline if spec else "na_applicability"))
    items = eligible_items(
        recipe, BuildOptions(source=source, splits=splits or None, limit=limit, progress=progress)
    )
    # The recipe's labeler options apply when the same backend is asked for; flags win.
    flagged = model_flags.spec
    recipe_options = spec.options if spec and spec.backend == flagged.backend else {}
    model = flagged.model_copy(update={"options": {**recipe_options, **flagged.options}})
    run = label_items(
        items,
        open_backend(model),
        ResponseCache(model_flags.cache_path()),
        guide,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        chunk_size=chunk_size,
        progress=progress,
    )
    write_parquet_atomic(run.table, out)
    values = run.table.column("na_applicable").to_pylist()
    summary = {
        **run.stats,
        "applicable": sum(v is True for v in values),
        "not_applicable": sum(v is False for v in values),
        "recipe": recipe.name,
        "output": str(out),
    }
    write_json_atomic(summary, beside(out, ".summary.json"))
    return summary
