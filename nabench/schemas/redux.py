"""MMLU-Redux as an audit source: the recipe's `audit.redux` section and the `redux` config's rows.

MMLU-Redux (Gema et al. 2024; `edinburgh-dawg/mmlu-redux-2.0`) re-annotated 100 MMLU test items
per subject with an `error_type`; it has no MMLU index, so rows are joined to items on subject,
question and choices (`nabench.audit.redux`).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, model_validator

from nabench.schemas.derive import RowModel
from nabench.schemas.item import ItemId
from nabench.schemas.model import SPEC_CONFIG

# Every error type but `ok` can be chosen for quarantine.
FlaggableType = Literal[
    "bad_question_clarity",
    "bad_options_clarity",
    "no_correct_answer",
    "multiple_correct_answers",
    "wrong_groundtruth",
    "expert",
]
ErrorType = Literal["ok", FlaggableType]  # nested Literals flatten: ok, then the flaggable
ERROR_TYPES: tuple[str, ...] = get_args(ErrorType)
# What lm-eval's Redux task drops too, but `expert` (an item only an expert could judge,
# not an error) is recorded, not quarantined, unless a recipe says otherwise.
DEFAULT_FLAGGED: tuple[FlaggableType, ...] = (
    "wrong_groundtruth",
    "no_correct_answer",
    "multiple_correct_answers",
    "bad_question_clarity",
    "bad_options_clarity",
)
REDUX_REASONS: tuple[str, ...] = tuple(f"redux_{t}" for t in get_args(FlaggableType))
REDUX_REQUIRED = ("question", "choices", "error_type")  # the join and the verdict
REDUX_OPTIONAL = ("source", "correct_answer", "potential_reason")


class ReduxSpec(BaseModel):
    """`audit.redux`: where the annotations are and which error types quarantine an item."""

    model_config = SPEC_CONFIG

    location: str = Field(
        min_length=1,
        description="A Hub dataset id (one config per subject, read with `datasets`) or a "
        "local folder: a Hub-layout copy, or `<subject>/*.parquet` / `<subject>/*.jsonl`.",
    )
    revision: str | None = Field(default=None, description="Hub revision (a Hub id only).")
    split: str = Field(default="test", description="The split of each subject config.")
    flag: list[FlaggableType] = Field(
        default_factory=lambda: list(DEFAULT_FLAGGED),
        description="Error types that quarantine an item as `redux_<error_type>`.",
    )


class AuditSpec(BaseModel):
    """A recipe's `audit` section: extra sources of known-bad items."""

    model_config = SPEC_CONFIG

    redux: ReduxSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _location_alone(cls, data: Any) -> Any:
        """`redux: <Hub id or folder>` is short for `redux: {location: ...}`."""
        if isinstance(data, dict) and isinstance(data.get("redux"), str):
            return {**data, "redux": {"location": data["redux"]}}
        return data


class ReduxAnnotation(RowModel):
    """The Redux annotation of one item of the build (the `redux` config, per split)."""

    unique = ("id",)

    id: ItemId
    subject: str
    error_type: ErrorType = Field(description="MMLU-Redux's verdict on the item.")
    flagged: bool = Field(description="Whether the error type quarantined the item.")
    annotation_source: str | None = Field(
        description="Redux's `source` column: where the annotators checked the answer."
    )
    correct_answer: str | None = Field(description="The answer Redux gives, where it differs.")
    potential_reason: str | None = Field(description="The annotators' note on the error.")
