"""Schema checks of whole tables: every published config is checked before it is staged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.schemas.derive import nullable_types
from nabench.schemas.kinds import arrow_schema, pandera_schema


@dataclass(frozen=True)
class Violation:
    """One broken rule on one row: `row` is the 0-based position in its file, printed 1-based
    (the JSONL line); -1 for a rule about the whole file."""

    where: str
    row: int
    id: str
    rule: str
    message: str

    def __str__(self) -> str:
        if self.row < 0:  # the whole file
            return f"{self.where}: [{self.rule}] {self.message}"
        return f"{self.where} row {self.row + 1} id={self.id}: [{self.rule}] {self.message}"


class TableSchemaError(NabenchError):
    """A table about to be published does not match its row kind's schema."""

    def __init__(self, where: str, violations: list[Violation]) -> None:
        self.violations = violations
        first = violations[0]
        more = f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"{where}: schema check failed: [{first.rule}] {first.message}{more}")


def schema_violations(schema: Any, frame: pd.DataFrame, where: str) -> list[Violation]:
    """Run a pandera schema lazily; each failure case becomes a violation naming row and id."""
    import pandera.errors as pe

    try:
        schema.validate(frame, lazy=True)
    except pe.SchemaErrors as exc:
        out = []
        ids = frame["id"].tolist() if "id" in frame else []
        for _, case in exc.failure_cases.head(1000).iterrows():
            idx = case.get("index")
            row = int(idx) if isinstance(idx, int | np.integer) else -1
            item_id = str(ids[row]) if 0 <= row < len(ids) else "-"
            out.append(
                Violation(
                    where,
                    row,
                    item_id,
                    f"schema:{case.get('column')}",
                    f"{case.get('check')} failed (value {case.get('failure_case')!r})",
                )
            )
        return out
    return []


def arrow_violations(kind: str, table: pa.Table, where: str) -> list[Violation]:
    """Column names, order and Arrow types against the kind's schema."""
    expected = arrow_schema(kind)
    if table.schema.names != expected.names:
        return [
            Violation(
                where,
                -1,
                "-",
                "schema:columns",
                f"columns {table.schema.names}, expected {expected.names}",
            )
        ]
    return [
        Violation(where, -1, "-", f"schema:{f.name}", f"{f.name} has type {got}, expected {f.type}")
        for f, got in zip(expected, table.schema.types, strict=True)
        if got != f.type
    ]


def table_violations(kind: str, table: pa.Table, where: str) -> list[Violation]:
    """Arrow schema (exact columns and types), then the pandera schema of a row kind."""
    out = arrow_violations(kind, table, where)
    if out:
        return out
    frame = table.to_pandas(types_mapper=nullable_types)
    return schema_violations(pandera_schema(kind), frame, where)


def check_table(kind: str, table: pa.Table, where: str) -> None:
    """Raise `TableSchemaError` (one line, first violation) unless `table` is a valid `kind`."""
    violations = table_violations(kind, table, where)
    if violations:
        raise TableSchemaError(where, violations)
