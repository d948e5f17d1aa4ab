"""Parquet read with its size bounded before anything is decompressed or decoded.

A 52 KB parquet can decode to gigabytes: a zstd page of zeros (the footer states the page's
uncompressed size), or a dictionary column whose one long string is repeated by a run-length
encoded index for a million rows (the footer's sizes stay small; only the decoded column is
huge). `read_parquet` checks the footer first (rows, uncompressed bytes per row group), then
reads every string column dictionary-encoded (its memory is the dictionary plus an index
per row) and computes the decoded size from the dictionary's lengths before decoding it.
Every refusal is an `UnsafeInput` naming the file, on one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from nabench.core.safe_load import UnsafeInput

__all__ = ["TableLimits", "read_parquet"]

MiB = 2**20


@dataclass(frozen=True)
class TableLimits:
    """Caps for one table file; the defaults hold a full MMLU config many times over."""

    max_rows: int = 2_000_000
    max_bytes: int = 128 * MiB  # decoded (in memory), and uncompressed per the footer ...
    # ... unless the file itself is large enough: a real table of repetitive prompts
    # (full mmlu-artifacts, 5.4 MB on disk) decodes to ~30x its size; a bomb to thousands.
    max_ratio: int = 64
    hard_max_bytes: int = 2048 * MiB

    def over(self, nbytes: int, file_size: int) -> bool:
        """Whether decoding `nbytes` from a file of `file_size` bytes is refused."""
        if nbytes <= self.max_bytes:
            return False
        return nbytes > self.hard_max_bytes or nbytes > self.max_ratio * max(file_size, 1)


def _string_leaves(pf: pq.ParquetFile, wanted: list[str]) -> list[str]:
    """Parquet leaf paths of byte-array columns (strings, also inside lists) of `wanted`."""
    schema = pf.schema
    leaves = (schema.column(i) for i in range(len(schema)))
    return [
        c.path for c in leaves if c.physical_type == "BYTE_ARRAY" and c.path.split(".")[0] in wanted
    ]


def _decoded_bytes(column: pa.ChunkedArray) -> int:
    """Bytes `column` takes once its dictionaries are decoded (without decoding it)."""
    total = 0
    for chunk in column.chunks:
        arr: Any = chunk
        if isinstance(arr, pa.ListArray | pa.LargeListArray):
            total += arr.offsets.nbytes
            arr = arr.flatten()
        if isinstance(arr, pa.DictionaryArray) and len(arr.dictionary) == 0:
            total += 8 * len(arr)  # all null
        elif isinstance(arr, pa.DictionaryArray):
            lengths = pc.binary_length(arr.dictionary).fill_null(0)
            used = pc.take(lengths, arr.indices.fill_null(0))
            total += int(pc.sum(used).as_py() or 0) + 8 * len(arr)
        else:
            total += arr.nbytes
    return total


def _check_footer(path: Path, meta: pq.FileMetaData, limits: TableLimits) -> None:
    if meta.num_rows > limits.max_rows:
        raise UnsafeInput(str(path), f"{meta.num_rows} rows exceed the limit of {limits.max_rows}")
    stated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if limits.over(stated, path.stat().st_size):
        raise UnsafeInput(
            str(path),
            f"{stated} bytes uncompressed exceed the limit of {limits.max_bytes} "
            "(a decompression bomb?)",
        )


def read_parquet(
    path: Path, limits: TableLimits = TableLimits(), columns: list[str] | None = None
) -> pa.Table:
    """The table in `path`, refused (UnsafeInput) before decoding if over `limits`."""
    path = Path(path)
    try:
        with pq.ParquetFile(path) as pf:
            _check_footer(path, pf.metadata, limits)
            wanted = columns or pf.schema_arrow.names
            strings = _string_leaves(pf, list(wanted))
            pf_dict = pq.ParquetFile(path, read_dictionary=strings) if strings else pf
            with pf_dict:
                table = pf_dict.read(columns=columns)
    except UnsafeInput:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise UnsafeInput(
            str(path), f"cannot read parquet ({type(exc).__name__}: {text})"
        ) from None
    decoded = sum(_decoded_bytes(table.column(name)) for name in table.column_names)
    if limits.over(decoded, path.stat().st_size):
        raise UnsafeInput(
            str(path),
            f"decodes to {decoded} bytes, over the limit of {limits.max_bytes} "
            "(a decompression bomb?)",
        )
    return _decode(table, pq.read_schema(path))


def _decode(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The table with its dictionary-read columns cast back to the file's own types."""
    for i, name in enumerate(table.column_names):
        want = schema.field(name).type
        if table.schema.field(i).type != want:
            table = table.set_column(i, name, table.column(i).cast(want))
    return table
