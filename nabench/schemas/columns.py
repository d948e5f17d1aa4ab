"""Columnar helpers shared by the builders.

Items travel as Arrow tables, and builders rewrite whole `list<string>` columns with Arrow
kernels (offsets + flat values), never per-row Python objects: full MMLU builds in well under
a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.arrow import list_parts
from nabench.schemas.tables import PERTURBED_ARROW


@dataclass(frozen=True)
class LabelColumns:
    """Label provenance carried onto every perturbed row (all null when unlabeled)."""

    na_applicable: pa.Array
    labeler: pa.Array
    guideline_version: pa.Array

    @classmethod
    def empty(cls, n: int) -> LabelColumns:
        return cls(pa.nulls(n, pa.bool_()), pa.nulls(n, pa.string()), pa.nulls(n, pa.string()))

    @classmethod
    def from_lists(
        cls, na_applicable: list[bool | None], labeler: list[Any], guideline_version: list[Any]
    ) -> LabelColumns:
        return cls(
            pa.array(na_applicable, pa.bool_()),
            pa.array(labeler, pa.string()),
            pa.array(guideline_version, pa.string()),
        )


def _list_array(offsets: np.ndarray, flat: pa.Array) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat)


def replace_at(choices: pa.Array, index: np.ndarray, text: str) -> pa.ListArray:
    """Element `index[i]` of list i replaced by `text` (vectorised)."""
    offsets, flat = list_parts(choices)
    mask = np.zeros(len(flat), dtype=bool)
    mask[offsets[:-1] + index] = True
    replacements = pa.array([text] * int(mask.sum()), pa.string())
    return _list_array(offsets, pc.replace_with_mask(flat, pa.array(mask), replacements))


def append_to_lists(choices: pa.Array, text: str) -> pa.ListArray:
    """`text` appended to every list (vectorised)."""
    offsets, flat = list_parts(choices)
    n = len(offsets) - 1
    new_offsets = offsets + np.arange(n + 1)
    is_new = np.zeros(int(new_offsets[-1]), dtype=bool)
    is_new[new_offsets[1:] - 1] = True
    take = np.empty(len(is_new), dtype=np.int64)
    take[~is_new] = np.arange(len(flat))
    take[is_new] = len(flat)
    combined = pa.concat_arrays([flat.cast(pa.string()), pa.array([text], pa.string())])
    return _list_array(new_offsets, combined.take(pa.array(take)))


def replace_each(choices: pa.Array, index: np.ndarray, texts: pa.Array) -> pa.ListArray:
    """Element `index[i]` of list i replaced by `texts[i]` (vectorised)."""
    offsets, flat = list_parts(choices)
    mask = np.zeros(len(flat), dtype=bool)
    mask[offsets[:-1] + index] = True
    return _list_array(offsets, pc.replace_with_mask(flat, pa.array(mask), texts.cast(pa.string())))


def move_out_to_last(choices: pa.Array, index: np.ndarray, text: str) -> pa.ListArray:
    """Element `index[i]` of list i removed, the others kept in order, `text` appended
    (every list keeps its length)."""
    offsets, flat = list_parts(choices)
    keep = np.ones(len(flat), dtype=bool)
    keep[offsets[:-1] + index] = False
    is_last = np.zeros(len(flat), dtype=bool)
    is_last[offsets[1:] - 1] = True
    take = np.empty(len(flat), dtype=np.int64)
    take[~is_last] = np.flatnonzero(keep)
    take[is_last] = len(flat)
    combined = pa.concat_arrays([flat.cast(pa.string()), pa.array([text], pa.string())])
    return _list_array(offsets, combined.take(pa.array(take)))


@dataclass(frozen=True)
class ItemColumns:
    """Eligible canonical items as Arrow columns, the input of every builder.

    `donors` are the items a builder may borrow text from (`foreign_key`): the whole audited
    split, so a `--limit`/`--sample` build borrows exactly what the full build does.
    """

    table: pa.Table
    labels: LabelColumns
    donors: pa.Table | None = None

    @classmethod
    def from_table(
        cls,
        table: pa.Table,
        labels: LabelColumns | None = None,
        donors: pa.Table | None = None,
    ) -> ItemColumns:
        table = table.combine_chunks()
        return cls(table, labels or LabelColumns.empty(table.num_rows), donors)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def ids(self) -> list[str]:
        return self.table.column("id").to_pylist()

    @property
    def choices(self) -> pa.Array:
        return self.table.column("choices").combine_chunks()

    @property
    def answer(self) -> np.ndarray:
        return self.table.column("answer").to_numpy().astype(np.int64, copy=False)


def perturbed_table(
    items: ItemColumns,
    *,
    variant: str,
    choices: pa.Array,
    answer: np.ndarray,
    replaced_index: np.ndarray | None,
    na_text: str | pa.Array | None,
    seed: int,
) -> pa.Table:
    """Assemble a perturbed config from new choices/answers plus the traceability columns."""
    n = len(items)
    t = items.table
    columns = [
        t.column("id"),
        t.column("source"),
        t.column("subject"),
        t.column("question"),
        choices,
        pa.array(answer, pa.int64()),
        pa.array([variant] * n, pa.string()),
        t.column("answer"),
        t.column("choices"),
        pa.nulls(n, pa.int64()) if replaced_index is None else pa.array(replaced_index, pa.int64()),
        _text_column(na_text, n),
        pa.array(np.full(n, seed, dtype=np.int64)),
        items.labels.na_applicable,
        items.labels.labeler,
        items.labels.guideline_version,
    ]
    return pa.Table.from_arrays(columns, schema=PERTURBED_ARROW)


def _text_column(text: str | pa.Array | None, n: int) -> pa.Array:
    """The `na_text` column: null, one text for every row, or one text per row."""
    if text is None:
        return pa.nulls(n, pa.string())
    if isinstance(text, str):
        return pa.array([text] * n, pa.string())
    return text.cast(pa.string())
