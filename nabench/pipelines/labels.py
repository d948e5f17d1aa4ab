"""The labeling step shared by the NA and NA-training pipelines: where a build's
NA-applicability labels come from, and how one split's eligible items are split by them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from nabench.audit.eligibility import split_by_flags
from nabench.label import check_coverage, resolve_label_source
from nabench.label.files import apply_labels
from nabench.perturb import LabelColumns
from nabench.pipelines.skeleton import BuildOptions

__all__ = ["build_label_source", "label_split"]


def build_label_source(recipe: Any, options: BuildOptions) -> Any:
    """Where labels come from: --labels overrides the recipe's `labels` section."""
    return resolve_label_source(
        recipe.labels, options.labels, options.cache, options.progress, options.yes
    )


def label_split(
    eligible: pa.Table, source: Any, split: str
) -> tuple[pa.Table, LabelColumns | None, pa.Table, pa.Table | None]:
    """(kept items, their label columns, label quarantine, labels table to publish)."""
    if source is None:
        return eligible, None, split_by_flags(eligible.slice(0, 0), {}).excluded, None
    frame, published = source.labels_for(eligible)
    result = apply_labels(eligible, frame)
    check_coverage(result, f"split {split}", source.describe())
    quarantine = split_by_flags(result.candidates, result.flags)
    return result.kept, result.labels, quarantine.excluded, published
