"""Compare two build folders row by row (content, not parquet bytes).

    python scripts/compare_builds.py OLD NEW

For every `<config>/<split>-*.parquet` in either folder, prints whether the rows are equal
or how many differ, with the first differing id and column. Exits 1 on any difference
(a config or column present on one side only counts as one).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ID_COLUMNS = ("id", "task_id", "item_id")


@dataclass(frozen=True)
class Diff:
    key: str
    rows: int
    differing: int
    first_id: Any = None
    first_column: str | None = None
    note: str = ""

    @property
    def equal(self) -> bool:
        return self.differing == 0 and not self.note

    def line(self) -> str:
        if self.equal:
            return f"{self.key}: equal ({self.rows} rows)"
        where = f"; first id {self.first_id!r}, column {self.first_column!r}"
        what = self.note or f"{self.differing} of {self.rows} rows differ"
        return f"{self.key}: DIFFERENT: {what}{where if self.first_column else ''}"


def tables_of(root: Path) -> dict[str, Path]:
    """{"config/split": parquet path} of a build folder (hidden folders skipped)."""
    found: dict[str, Path] = {}
    for path in sorted(root.glob("*/*.parquet")):
        if path.parent.name.startswith("."):
            continue
        split = path.name.split("-00000-of-")[0].removesuffix(".parquet")
        found[f"{path.parent.name}/{split}"] = path
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def differing_rows(old: pa.ChunkedArray, new: pa.ChunkedArray) -> list[int]:
    """Row positions whose values differ (types may differ: values are compared)."""
    if old.type == new.type and old.equals(new):
        return []
    a, b = old.to_pylist(), new.to_pylist()
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if not _same(x, y)]


def compare_tables(key: str, old: pa.Table, new: pa.Table) -> Diff:
    ids = next((c for c in ID_COLUMNS if c in old.column_names), None)

    def row_id(i: int) -> Any:
        return old.column(ids)[i].as_py() if ids and i < old.num_rows else i

    only = sorted(set(old.column_names) ^ set(new.column_names))
    if only:
        return Diff(key, old.num_rows, 0, None, only[0], f"column(s) on one side only: {only}")
    if old.num_rows != new.num_rows:
        return Diff(key, old.num_rows, abs(old.num_rows - new.num_rows), None, None,
                    f"{old.num_rows} rows before, {new.num_rows} after")  # fmt: skip
    bad: dict[int, str] = {}
    for name in old.column_names:
        for i in differing_rows(old.column(name), new.column(name)):
            bad.setdefault(i, name)
    if not bad:
        return Diff(key, old.num_rows, 0)
    first = min(bad)
    return Diff(key, old.num_rows, len(bad), row_id(first), bad[first])


def compare_builds(old: Path, new: Path) -> list[Diff]:
    a, b = tables_of(old), tables_of(new)
    diffs: list[Diff] = []
    for key in sorted(a.keys() | b.keys()):
        if key not in b or key not in a:
            side = "NEW" if key not in b else "OLD"
            diffs.append(Diff(key, 0, 1, note=f"missing in {side}"))
            continue
        diffs.append(compare_tables(key, pq.read_table(a[key]), pq.read_table(b[key])))
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    for root in (args.old, args.new):
        if not root.is_dir():
            parser.error(f"{root} is not a folder")
    diffs = compare_builds(args.old, args.new)
    for diff in diffs:
        print(diff.line())
    differing = [d for d in diffs if not d.equal]
    print(f"{len(diffs) - len(differing)} equal, {len(differing)} differing")
    return 1 if differing or not diffs else 0


if __name__ == "__main__":
    sys.exit(main())
