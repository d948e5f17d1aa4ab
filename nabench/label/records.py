"""The label record: pydantic model, Arrow schema and pandera schema."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import pandera.pandas as pdx


class LabelRecord(BaseModel):
    """One NA-applicability label. `na_applicable` is null when the output was invalid."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    na_applicable: bool | None
    rule: str | None
    rationale: str | None
    model: str
    backend: str
    guideline_version: str
    prompt_sha256: str
    raw_output: str
    valid: bool
    attempts: int


LABEL_ARROW = pa.schema(
    [
        ("id", pa.string()),
        ("na_applicable", pa.bool_()),
        ("rule", pa.string()),
        ("rationale", pa.string()),
        ("model", pa.string()),
        ("backend", pa.string()),
        ("guideline_version", pa.string()),
        ("prompt_sha256", pa.string()),
        ("raw_output", pa.string()),
        ("valid", pa.bool_()),
        ("attempts", pa.int64()),
    ]
)


@cache
def label_pandera_schema() -> pdx.DataFrameSchema:
    import pandera.pandas as pdx

    return pdx.DataFrameSchema(
        {
            "id": pdx.Column(str, unique=True),
            "na_applicable": pdx.Column("boolean", nullable=True),
            "rule": pdx.Column(str, nullable=True),
            "rationale": pdx.Column(str, nullable=True),
            "model": pdx.Column(str),
            "backend": pdx.Column(str),
            "guideline_version": pdx.Column(str),
            "prompt_sha256": pdx.Column(str, pdx.Check.str_length(64, 64)),
            "raw_output": pdx.Column(str),
            "valid": pdx.Column("boolean"),
            "attempts": pdx.Column("Int64", pdx.Check.ge(1)),
        },
        # An invalid label never carries a guessed value.
        checks=pdx.Check(
            lambda df: df["valid"] | df["na_applicable"].isna(),
            error="invalid labels must have na_applicable = null",
        ),
        strict=True,
        name="label",
    )
