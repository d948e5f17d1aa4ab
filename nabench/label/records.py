"""The label record: its model lives in `nabench.schemas` (one definition); the Arrow and
pandera schemas here are derived from it."""

from __future__ import annotations

from typing import Any

from nabench.schemas import arrow_schema, pandera_schema
from nabench.schemas.rows import LabelRecord

LABEL_ARROW = arrow_schema("labels")


def label_pandera_schema() -> Any:
    return pandera_schema("labels")


__all__ = ["LABEL_ARROW", "LabelRecord", "label_pandera_schema"]
