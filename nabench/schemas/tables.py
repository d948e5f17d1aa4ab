"""Arrow / `datasets` features of every table nabench writes, and pandera schemas for them."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    import datasets
    import pandera.pandas as pdx

ITEM_COLUMNS = ("id", "source", "subject", "question", "choices", "answer")
PERTURBED_EXTRA = (
    "variant",
    "original_answer",
    "original_choices",
    "replaced_index",
    "na_text",
    "seed",
    "na_applicable",
    "labeler",
    "guideline_version",
)
PERTURBED_COLUMNS = ITEM_COLUMNS + PERTURBED_EXTRA
EXCLUDED_COLUMNS = (*ITEM_COLUMNS, "reason", "reasons")

_STR = pa.string()
_LIST_STR = pa.list_(pa.string())

ITEM_ARROW = pa.schema(
    [
        ("id", _STR),
        ("source", _STR),
        ("subject", _STR),
        ("question", _STR),
        ("choices", _LIST_STR),
        ("answer", pa.int64()),
    ]
)
PERTURBED_ARROW = pa.schema(
    [
        *ITEM_ARROW,
        ("variant", _STR),
        ("original_answer", pa.int64()),
        ("original_choices", _LIST_STR),
        ("replaced_index", pa.int64()),
        ("na_text", _STR),
        ("seed", pa.int64()),
        ("na_applicable", pa.bool_()),
        ("labeler", _STR),
        ("guideline_version", _STR),
    ]
)
EXCLUDED_ARROW = pa.schema([*ITEM_ARROW, ("reason", _STR), ("reasons", _LIST_STR)])

ARROW_SCHEMAS: dict[str, pa.Schema] = {
    "item": ITEM_ARROW,
    "perturbed_item": PERTURBED_ARROW,
    "excluded_item": EXCLUDED_ARROW,
}


def features_for(schema: pa.Schema) -> datasets.Features:
    """The `datasets.Features` matching an Arrow schema (written into parquet and the card)."""
    import datasets

    return datasets.Features.from_arrow_schema(schema)


def with_hf_metadata(schema: pa.Schema) -> pa.Schema:
    """Attach the `huggingface` schema metadata so `load_dataset` restores the features."""
    return features_for(schema).arrow_schema


@cache
def pandera_schema(kind: str) -> pdx.DataFrameSchema:
    """pandera schema of a table kind (`perturbed_item`, `excluded_item`, `item`)."""
    import pandera.pandas as pdx

    def non_empty_str_list(values: object) -> bool:
        return isinstance(values, list | tuple) or hasattr(values, "__len__")

    base = {
        "id": pdx.Column(str, unique=True, nullable=False),
        "source": pdx.Column(str, nullable=False),
        "subject": pdx.Column(str, nullable=True),
        "question": pdx.Column(str, nullable=False),
        "choices": pdx.Column(object, pdx.Check(non_empty_str_list, element_wise=True)),
        "answer": pdx.Column("int64", pdx.Check.ge(0), nullable=False),
    }
    if kind == "item":
        cols = base
    elif kind == "perturbed_item":
        cols = {
            **base,
            "variant": pdx.Column(str, nullable=False),
            "original_answer": pdx.Column("int64", pdx.Check.ge(0)),
            "original_choices": pdx.Column(object),
            "replaced_index": pdx.Column("Int64", pdx.Check.ge(0), nullable=True),
            "na_text": pdx.Column(str, nullable=True),
            "seed": pdx.Column("int64"),
            "na_applicable": pdx.Column("boolean", nullable=True),
            "labeler": pdx.Column(str, nullable=True),
            "guideline_version": pdx.Column(str, nullable=True),
        }
    elif kind == "excluded_item":
        cols = {
            **base,
            # Quarantined rows are kept as the source had them, malformed ones included.
            "question": pdx.Column(str, nullable=True),
            "choices": pdx.Column(object, nullable=True),
            "answer": pdx.Column("Int64", nullable=True),
            "id": pdx.Column(str, nullable=False),
            "reason": pdx.Column(str, nullable=False),
            "reasons": pdx.Column(object),
        }
    else:
        raise KeyError(kind)
    return pdx.DataFrameSchema(cols, strict=True, coerce=False, name=kind)
