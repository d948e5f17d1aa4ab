"""Labels: NA-applicability from a file or from an LLM following a versioned guideline.

`LabelSource` hides where labels come from: the build asks it for the labels of each
split's eligible items and gets a frame (`id`, `na_applicable`, `model`,
`guideline_version`) plus the table published as the `labels` config.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.label.checks import LabelingFailed
from nabench.label.files import check_coverage, read_labels
from nabench.label.guideline import Guideline, load_guideline
from nabench.label.labeler import LabelRun, label_items, label_plan
from nabench.label.records import LABEL_ARROW, LabelRecord
from nabench.llm import ResponseCache, estimate_hook
from nabench.llm.options import default_cache_path, open_backend
from nabench.schemas.recipe import LLMLabelerSpec


class LabelSource(ABC):
    mode: str

    @abstractmethod
    def labels_for(self, items: pa.Table) -> tuple[pd.DataFrame, pa.Table]:
        """(frame with id/na_applicable/model/guideline_version, table to publish)."""

    def info(self) -> dict[str, Any]:
        return {}

    def describe(self) -> str:
        """Where the labels come from, for error messages."""
        return self.mode


@dataclass
class FileLabels(LabelSource):
    path: Path
    mode: str = "file"

    def __post_init__(self) -> None:
        self.frame = read_labels(self.path)

    def labels_for(self, items: pa.Table) -> tuple[pd.DataFrame, pa.Table]:
        ids = set(items.column("id").to_pylist())
        part = self.frame[self.frame["id"].isin(ids)].sort_values("id", kind="stable")
        part = part.reset_index(drop=True)
        published = part.copy()
        for col in published.columns:
            if col != "na_applicable" and published[col].dtype == object:
                published[col] = published[col].map(lambda v: None if v is None else str(v))
        return self.frame, pa.Table.from_pandas(published, preserve_index=False)

    def describe(self) -> str:
        return f"labels file {self.path}"

    def info(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "models": sorted({str(m) for m in self.frame["model"].dropna()}),
            "guideline_versions": sorted(
                {str(v) for v in self.frame["guideline_version"].dropna()}
            ),
        }


@dataclass
class LLMLabels(LabelSource):
    backend: Any
    cache: Any
    guideline: Guideline
    progress: bool = True
    mode: str = "llm"
    stats: list[dict[str, Any]] = field(default_factory=list)
    confirmed: bool = False  # --labels llm / --yes: a long job may start
    max_error_share: float = 0.0

    def labels_for(self, items: pa.Table) -> tuple[pd.DataFrame, pa.Table]:
        plan = label_plan(items, self.backend, self.cache, self.guideline)
        plan.require_confirmation(self.confirmed)
        run = label_items(
            items,
            self.backend,
            self.cache,
            self.guideline,
            progress=self.progress,
            max_error_share=self.max_error_share,
            on_chunk=estimate_hook(plan),
        )
        self.stats.append(run.stats)
        frame = run.table.to_pandas()
        frame["na_applicable"] = [None if pd.isna(v) else bool(v) for v in frame["na_applicable"]]
        return frame, run.table

    def describe(self) -> str:
        return f"{self.backend.name}:{self.backend.model_id}"

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.backend.name,
            "model": self.backend.model_id,
            "model_revision": self.backend.revision,
            "guideline": self.guideline.name,
            "guideline_version": self.guideline.version,
            "runs": self.stats,
        }


def llm_label_source(
    spec: LLMLabelerSpec, cache_path: Path | None, progress: bool, confirmed: bool = False
) -> LLMLabels:
    """The recipe's LLM labeler (`labels.llm`: a `ModelSpec` plus guideline and error share)."""

    backend = open_backend(spec)
    cache = ResponseCache(cache_path or default_cache_path())
    share = spec.max_error_share
    return LLMLabels(
        backend,
        cache,
        load_guideline(spec.guideline),
        progress,
        confirmed=confirmed,
        max_error_share=share,
    )


def resolve_label_source(
    labels: Any, choice: str | None, cache: Path | None, progress: bool, confirmed: bool
) -> LabelSource | None:
    """Where a build's labels come from: `--labels` (none | llm | PATH) over the recipe's
    `labels` section; `--labels llm` (or `confirmed`, from --yes) lets a long LLM job start."""
    confirmed = confirmed or choice == "llm"  # asking for the model by name is the consent
    if choice is None:
        choice = {"llm": "llm", "file": labels.path}.get(labels.mode, "none")
    if choice == "none":
        return None
    if choice == "llm":
        if labels.llm is None:
            raise NabenchError("--labels llm: the recipe has no labels.llm section")
        return llm_label_source(labels.llm, cache, progress, confirmed=confirmed)
    return FileLabels(Path(choice))


__all__ = [
    "LABEL_ARROW",
    "FileLabels",
    "Guideline",
    "LLMLabels",
    "LabelRecord",
    "LabelRun",
    "LabelSource",
    "LabelingFailed",
    "check_coverage",
    "label_items",
    "label_plan",
    "llm_label_source",
    "load_guideline",
    "read_labels",
    "resolve_label_source",
]
