"""Every published row kind -> its model (the one definition); Arrow, pandera and JSON Schema
are derived from the model."""

from __future__ import annotations

from functools import cache
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from nabench.schemas import derive
from nabench.schemas.contribution import ContributionHeader
from nabench.schemas.item import ExcludedItem, Item, PerturbedItem
from nabench.schemas.redux import ReduxAnnotation
from nabench.schemas.rows import (
    ArtifactPrompt,
    InferenceOutput,
    InsertedQuestionPrompt,
    LabelRecord,
    SelfknowClassification,
    SelfknowQuarantine,
    SelfknowTask,
)

ROW_KINDS: dict[str, type[BaseModel]] = {
    "item": Item,
    "perturbed_item": PerturbedItem,
    "excluded_item": ExcludedItem,
    "labels": LabelRecord,
    "artifact": ArtifactPrompt,
    "artifact_inserted": InsertedQuestionPrompt,
    "artifact_inference": InferenceOutput,
    "selfknow_tasks": SelfknowTask,
    "selfknow_quarantine": SelfknowQuarantine,
    "selfknow_classifications": SelfknowClassification,
    "redux_annotation": ReduxAnnotation,
}
"""Row kinds of published tables (`nabench validate` and the builds check these)."""

JSON_MODELS: dict[str, type[BaseModel]] = {**ROW_KINDS, "contribution_header": ContributionHeader}
"""Everything exported as JSON Schema by `nabench schema export`."""

# An artifact table may carry the question-inference columns (validated as one kind).
_OPTIONAL: dict[str, tuple[type[BaseModel], ...]] = {
    "artifact": (InsertedQuestionPrompt, InferenceOutput),
}


def row_model(kind: str) -> type[BaseModel]:
    try:
        return ROW_KINDS[kind]
    except KeyError:
        raise KeyError(f"unknown row kind {kind!r} (known: {', '.join(ROW_KINDS)})") from None


@cache
def arrow_schema(kind: str) -> pa.Schema:
    """The Arrow schema of a row kind (column order and types as written to parquet)."""
    return derive.arrow_schema(row_model(kind))


def pandera_schema(kind: str) -> Any:
    """The pandera schema of a row kind (strict; pandas frames from `derive.nullable_types`)."""
    return derive.pandera_schema(row_model(kind), _OPTIONAL.get(kind, ()))


def json_schema(kind: str) -> dict[str, Any]:
    return JSON_MODELS[kind].model_json_schema()
