"""Load self-knowledge result tables (CSV, TSV, XLSX, parquet) into canonical columns.

Canonical columns (all strings, missing cells as ``""``):

* required: ``generated_class``, ``generated_reason``, ``classified_class``,
  ``classified_reason``;
* optional: ``generated_type``, ``classified_type``, ``id``, ``task``, ``llm``.

Which source column feeds which canonical column is decided, in this order, by

1. a preset whose required source columns are all present (the released Line of Duty files,
   :data:`LINE_OF_DUTY_COLUMNS`, are detected this way);
2. source columns already named like the canonical ones;
3. an explicit mapping (``{"generated_class": "Other Name"}`` or the CLI string
   ``"generated_class=Other Name,classified_class=..."``), which overrides both.

Source names are looked up exactly first, then ignoring case, whitespace and punctuation.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from nabench.core.errors import NabenchError
from nabench.selfknow.taxonomy import normalise_reason

REQUIRED_COLUMNS: tuple[str, ...] = (
    "generated_class",
    "generated_reason",
    "classified_class",
    "classified_reason",
)
OPTIONAL_COLUMNS: tuple[str, ...] = ("generated_type", "classified_type", "id", "task", "llm")
CANONICAL_COLUMNS: tuple[str, ...] = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

LINE_OF_DUTY_COLUMNS: Mapping[str, str] = {
    "id": "ID",
    "task": "Task",
    "llm": "LLM",
    "generated_class": "Task Category (Generation)",
    "generated_type": "Type of Self-Knowledge (Generation)",
    "generated_reason": "Reason for Incapacity (Generation)",
    "classified_class": "Task Category (Classification)",
    "classified_type": "Type of Self-Knowledge (Classification)",
    "classified_reason": "Reason for Incapacity (Classification)",
}
"""Layout of the CSVs released with Line of Duty (Kale & Nadadur, 2025)."""

PRESETS: Mapping[str, Mapping[str, str]] = {"line_of_duty": LINE_OF_DUTY_COLUMNS}

_CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
_EXCEL_SUFFIXES = {".xlsx", ".xlsm"}
_PARQUET_SUFFIXES = {".parquet", ".pq"}


def parse_column_mapping(specs: str | Iterable[str] | None) -> dict[str, str]:
    """Parse ``"canonical=Source Name,..."`` (one string or several) into a mapping.

    Raises :class:`NabenchError` for a malformed item or an unknown canonical name.
    """
    if specs is None:
        return {}
    items = [specs] if isinstance(specs, str) else list(specs)
    mapping: dict[str, str] = {}
    for spec in items:
        for part in spec.split(","):
            if not part.strip():
                continue
            canonical, sep, source = part.partition("=")
            canonical, source = canonical.strip(), source.strip()
            if not sep or not canonical or not source:
                raise NabenchError(
                    f"bad column mapping {part.strip()!r}: expected canonical=Source Column"
                )
            if canonical not in CANONICAL_COLUMNS:
                raise NabenchError(
                    f"unknown canonical column {canonical!r} in column mapping; "
                    f"expected one of {', '.join(CANONICAL_COLUMNS)}"
                )
            mapping[canonical] = source
    return mapping


def read_table_file(path: str | Path) -> pd.DataFrame:
    """Read a CSV/TSV/XLSX/parquet file as strings, missing cells as ``""``.

    Raises :class:`NabenchError` with a one-line message when the file cannot be read.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in {*_CSV_SUFFIXES, *_EXCEL_SUFFIXES, *_PARQUET_SUFFIXES}:
        raise NabenchError(
            f"cannot read {path}: unsupported file type {suffix or '(none)'!r}; "
            "use .csv, .tsv, .xlsx or .parquet"
        )
    if not path.is_file():
        raise NabenchError(f"cannot read {path}: no such file")
    try:
        if suffix in _CSV_SUFFIXES:
            frame = pd.read_csv(path, sep=_CSV_SUFFIXES[suffix], dtype=str, keep_default_na=False)
        elif suffix in _EXCEL_SUFFIXES:
            frame = pd.read_excel(path, dtype=str, engine="openpyxl")
        else:
            frame = pd.read_parquet(path)
    except ImportError as exc:
        raise NabenchError(f"cannot read {path}: missing dependency ({exc.name})") from exc
    except (OSError, ValueError, UnicodeDecodeError, zipfile.BadZipFile, KeyError) as exc:
        # pandas' ParserError / EmptyDataError and pyarrow's ArrowInvalid are ValueErrors.
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise NabenchError(f"cannot read {path}: {message}") from exc
    frame.columns = [str(column) for column in frame.columns]
    return frame


def _find_column(columns: list[str], wanted: str) -> str | None:
    if wanted in columns:
        return wanted
    key = normalise_reason(wanted)
    matches = [column for column in columns if normalise_reason(column) == key]
    return matches[0] if len(matches) == 1 else None


def _detect(columns: list[str]) -> dict[str, str]:
    for preset in PRESETS.values():
        found = {canonical: _find_column(columns, source) for canonical, source in preset.items()}
        if all(found.get(canonical) for canonical in REQUIRED_COLUMNS):
            return {canonical: source for canonical, source in found.items() if source}
    return {canonical: canonical for canonical in CANONICAL_COLUMNS if canonical in columns}


def _as_text(series: pd.Series) -> list[str]:
    return ["" if pd.isna(value) else str(value) for value in series.tolist()]


def canonicalise_table(
    frame: pd.DataFrame, columns: Mapping[str, str] | None = None, *, source: str = "table"
) -> pd.DataFrame:
    """Select and rename ``frame``'s columns to the canonical ones (see module docstring).

    ``source`` names the input in error messages. Raises :class:`NabenchError` when a required
    canonical column cannot be found.
    """
    available = [str(column) for column in frame.columns]
    resolved = _detect(available)
    for canonical, wanted in (columns or {}).items():
        if canonical not in CANONICAL_COLUMNS:
            raise NabenchError(
                f"unknown canonical column {canonical!r}; expected one of "
                f"{', '.join(CANONICAL_COLUMNS)}"
            )
        found = _find_column(available, wanted)
        if found is None:
            raise NabenchError(
                f"{source}: column {wanted!r} (for {canonical}) not found; "
                f"available: {', '.join(available)}"
            )
        resolved[canonical] = found
    missing = [canonical for canonical in REQUIRED_COLUMNS if canonical not in resolved]
    if missing:
        hint = ",".join(f"{name}=COLUMN" for name in missing)
        raise NabenchError(
            f"{source}: missing column(s) {', '.join(missing)}; map them with --columns {hint} "
            f"(available: {', '.join(available) or 'none'})"
        )
    data = {
        canonical: _as_text(frame[resolved[canonical]])
        for canonical in CANONICAL_COLUMNS
        if canonical in resolved
    }
    return pd.DataFrame(data, index=pd.RangeIndex(len(frame)), dtype=object)


def load_selfknow_table(path: str | Path, columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Read ``path`` and return it with canonical columns (see module docstring)."""
    return canonicalise_table(read_table_file(path), columns, source=str(path))
