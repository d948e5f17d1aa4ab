"""Row models (one definition per published row kind) and the schemas derived from them.

`check_table(kind, table, where)` raises `TableSchemaError` unless a table matches its kind's
Arrow schema and pandera schema; `table_violations` returns the violations instead.
"""

from nabench.schemas.check import (
    TableSchemaError,
    Violation,
    arrow_violations,
    check_table,
    schema_violations,
    table_violations,
)
from nabench.schemas.derive import nullable_types
from nabench.schemas.kinds import (
    JSON_MODELS,
    ROW_KINDS,
    arrow_schema,
    json_schema,
    pandera_schema,
    row_model,
)

__all__ = [
    "JSON_MODELS",
    "ROW_KINDS",
    "TableSchemaError",
    "Violation",
    "arrow_schema",
    "arrow_violations",
    "check_table",
    "json_schema",
    "nullable_types",
    "pandera_schema",
    "row_model",
    "schema_violations",
    "table_violations",
]
