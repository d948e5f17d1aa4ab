"""Arrow / `datasets` features of the NA build's tables, and their pandera schemas — all
derived from the row models (`schemas.item`), never written out a second time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from nabench.schemas import kinds

if TYPE_CHECKING:
    import datasets

ITEM_ARROW = kinds.arrow_schema("item")
PERTURBED_ARROW = kinds.arrow_schema("perturbed_item")
EXCLUDED_ARROW = kinds.arrow_schema("excluded_item")
ITEM_COLUMNS = tuple(ITEM_ARROW.names)
PERTURBED_COLUMNS = tuple(PERTURBED_ARROW.names)
PERTURBED_EXTRA = PERTURBED_COLUMNS[len(ITEM_COLUMNS) :]
EXCLUDED_COLUMNS = tuple(EXCLUDED_ARROW.names)

ARROW_SCHEMAS: dict[str, pa.Schema] = {
    kind: kinds.arrow_schema(kind) for kind in ("item", "perturbed_item", "excluded_item", "labels")
}


def features_for(schema: pa.Schema) -> datasets.Features:
    """The `datasets.Features` matching an Arrow schema (written into parquet and the card)."""
    import datasets

    return datasets.Features.from_arrow_schema(schema)


def pandera_schema(kind: str) -> Any:
    """pandera schema of a table kind (`perturbed_item`, `excluded_item`, `item`, ...)."""
    return kinds.pandera_schema(kind)
