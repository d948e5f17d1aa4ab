"""Arrow helpers shared by the audit and the validators: list columns read position by position."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def list_parts(choices: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(offsets starting at 0, flat values) of a list<string> column."""
    arr = choices.combine_chunks() if isinstance(choices, pa.ChunkedArray) else choices
    offsets = arr.offsets.to_numpy().astype(np.int64)
    base = int(offsets[0]) if len(offsets) else 0
    flat = arr.values.slice(base, int(offsets[-1]) - base) if len(offsets) else arr.values
    return offsets - base, flat


def as_bool_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Arrow booleans as numpy, null -> False."""
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


class ListColumn:
    """A list<string> column as offsets + flat values, read position by position.

    Options lists are short (4-5), so each rule compares at most a handful of aligned
    "element j of every row" arrays with Arrow's memcmp kernels; no hashing, no Python loop
    over rows.
    """

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if arr.null_count:
            arr = pc.if_else(pc.is_null(arr), pa.scalar([], arr.type), arr)
        offsets, flat = list_parts(arr)
        self.offsets = offsets
        self.lengths = np.diff(offsets)
        self.flat = flat.cast(pa.string()).fill_null("")
        self._columns: dict[int, pa.Array] = {}

    @property
    def width(self) -> int:
        return int(self.lengths.max(initial=0))

    def per_row_any(self, flat_mask: np.ndarray) -> np.ndarray:
        """Per list: does any of its elements satisfy `flat_mask`?"""
        running = np.concatenate([[0], np.cumsum(flat_mask, dtype=np.int64)])
        return running[self.offsets[1:]] > running[self.offsets[:-1]]

    def column(self, j: int, values: pa.Array | None = None) -> pa.Array:
        """Element j of every list (null where a list is shorter); `values` realigns flat."""
        if values is None and j in self._columns:
            return self._columns[j]
        ok = self.lengths > j
        source = self.flat if values is None else values
        if len(source) == 0:
            out = pa.nulls(len(self.lengths), pa.string())
        else:
            pos = np.minimum(self.offsets[:-1] + j, len(source) - 1)
            out = source.take(pa.array(pos))
            if not ok.all():
                out = pc.if_else(pa.array(ok), out, pa.scalar(None, pa.string()))
        if values is None:
            self._columns[j] = out
        return out

    def at(self, index: np.ndarray) -> pa.Array:
        """Element `index[i]` of list i (null where out of range)."""
        ok = (index >= 0) & (index < self.lengths)
        if len(self.flat) == 0:
            return pa.nulls(len(index), pa.string())
        pos = np.where(ok, self.offsets[:-1] + np.where(ok, index, 0), 0)
        pos = np.minimum(pos, len(self.flat) - 1)
        taken = self.flat.take(pa.array(pos))
        return taken if ok.all() else pc.if_else(pa.array(ok), taken, pa.scalar(None, pa.string()))

    def count_equal(self, per_row: pa.Array) -> np.ndarray:
        """How many elements of list i equal per_row[i]."""
        counts = np.zeros(len(self.lengths), dtype=int)
        for j in range(self.width):
            counts += as_bool_mask(pc.equal(self.column(j), per_row))
        return counts

    def prefix_equal(self, other: ListColumn) -> np.ndarray:
        """Whether the first min(len_i, other_len_i) elements of each list are equal."""
        if np.array_equal(self.offsets, other.offsets):  # same shapes: one aligned comparison
            return ~self.per_row_any(~as_bool_mask(pc.equal(self.flat, other.flat)))
        ok = np.ones(len(self.lengths), dtype=bool)
        for j in range(min(self.width, other.width)):
            both = (self.lengths > j) & (other.lengths > j)
            ok &= ~both | as_bool_mask(pc.equal(self.column(j), other.column(j)))
        return ok

    def has_duplicates(self, values: pa.Array) -> np.ndarray:
        """Whether list i holds two equal `values` (aligned with the flat elements)."""
        cols = [self.column(j, values) for j in range(self.width)]
        dup = np.zeros(len(self.lengths), dtype=bool)
        for j in range(len(cols)):
            for k in range(j + 1, len(cols)):
                dup |= as_bool_mask(pc.equal(cols[j], cols[k]))  # null (list too short) -> False
        return dup


def repeated_values(values: pa.Array | pa.ChunkedArray) -> tuple[int, object, int]:
    """(how many values occur more than once, the first of them, its count); (0, None, 0)
    when every value is distinct. One count behind every "id repeated" error."""
    counts = pc.value_counts(values)
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    if not len(repeated):
        return 0, None, 0
    first = repeated[0].as_py()
    return len(repeated), first["values"], int(first["counts"])
