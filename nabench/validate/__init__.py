"""Validators: eligibility audit, row invariants, and `validate_path` for files and folders."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.core.bounded_read import read_parquet
from nabench.core.errors import NabenchError
from nabench.core.safe_load import UnsafeInput
from nabench.schemas.tables import ARROW_SCHEMAS
from nabench.validate.artifacts import check_artifacts, prompt_type_counts
from nabench.validate.build_tree import build_kind, check_build_tree
from nabench.validate.contributions import is_contributions_dir, validate_contributions
from nabench.validate.invariants import (
    LETTER_SHARE_WARNING,
    ValidationReport,
    Violation,
    check_against_original,
    check_ids_in_original,
    check_perturbed,
    check_schema,
    letter_distribution,
)
from nabench.validate.na_train import Parse, validate_na_train_dir
from nabench.validate.selfknow import validate_selfknow_dir


def read_rows(path: Path) -> pa.Table:
    """A parquet or JSONL file as an Arrow table (a clear error if unreadable)."""
    try:
        if path.suffix == ".parquet":
            return read_parquet(path)  # bounded before decoding (a 71 KB bomb took 2 GB)
        if path.suffix in {".jsonl", ".json"}:
            import pandas as pd

            return pa.Table.from_pandas(
                pd.read_json(path, lines=True, dtype=False), preserve_index=False
            )
    except UnsafeInput:
        raise
    except Exception as exc:
        raise NabenchError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    raise NabenchError(f"{path}: expected a .parquet or .jsonl file")


def table_kind(table: pa.Table) -> str:
    names = set(table.column_names)
    if "prompt_type" in names:
        return "artifact"
    if "variant" in names:
        return "perturbed_item"
    if "reason" in names:
        return "excluded_item"
    if "na_applicable" in names and "choices" not in names:
        return "labels"
    return "item"


def _coerce(table: pa.Table, kind: str) -> pa.Table:
    """JSONL loses Arrow types: cast to the schema's types where the columns match."""

    schema = ARROW_SCHEMAS.get(kind)
    if schema is None or set(table.column_names) != set(schema.names):
        return table
    try:
        return table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return table


def validate_table(
    table: pa.Table, where: str, report: ValidationReport, text: str = "stripped"
) -> None:
    """Check one table; `text` is how an artifact build showed source text (build.json)."""
    kind = table_kind(table)
    table = _coerce(table, kind)
    report.files += 1
    report.rows += table.num_rows
    if kind == "labels":
        return
    if kind == "artifact":
        report.violations.extend(check_artifacts(table, where, text=text))
        types = " ".join(f"{k}={v}" for k, v in prompt_type_counts(table).items())
        report.notes.append(f"{where}: {table.num_rows} rows, prompt types {types}")
        return
    schema_violations = check_schema(table, kind, where)
    report.violations.extend(schema_violations)
    if kind == "perturbed_item" and not schema_violations:
        report.violations.extend(check_perturbed(table, where))
        shares = letter_distribution(table)
        pretty = " ".join(f"{k}={v:.1%}" for k, v in shares.items())
        report.notes.append(f"{where}: {table.num_rows} rows, answer letters {pretty}")
        for letter, share in shares.items():
            if share > LETTER_SHARE_WARNING:
                report.notes.append(f"warning: {where}: letter {letter} is the key in {share:.1%}")


def build_text_mode(folder: Path) -> str:
    """How a built folder showed source text in its prompts (`stripped` unless its manifest
    says otherwise, e.g. `raw` under the `artifacts-paper` protocol)."""
    manifest = folder / "build.json"
    if not manifest.is_file():
        return "stripped"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NabenchError(f"{manifest}: not valid JSON ({exc})") from None
    return str(data.get("text") or "stripped")


def validate_path(
    path: Path,
    *,
    sources: Mapping[str, str] | None = None,
    release: Path | None = None,
    limits: Any = None,
    parse: Parse | None = None,
) -> ValidationReport:
    """Validate a built folder (every config, plus ids traced to `original`), one file, or
    contributed perturbations (a folder holding `contribution.yaml` files; `sources` maps a
    dataset name, or '*', to a location for id traceability, `release` is a built folder to
    check duplicates against, `limits` a `contributions.Limits`)."""
    report = ValidationReport()
    if not path.exists():
        raise NabenchError(f"{path} does not exist")
    if path.is_file():
        validate_table(read_rows(path), path.name, report)
        return report

    kind = build_kind(path)
    if kind == "na-train":  # its own invariants; `parse` is the evaluation parser
        return validate_na_train_dir(path, parse)
    if kind == "selfknow":
        return validate_selfknow_dir(path)
    if is_contributions_dir(path):
        result: ValidationReport = validate_contributions(
            path, sources=sources, release=release, limits=limits
        )
        return result
    files = sorted(p for p in path.rglob("*.parquet") if not p.name.startswith("."))
    text = build_text_mode(path)
    if not files:
        raise NabenchError(f"{path}: no parquet files found")
    report.violations.extend(check_build_tree(path))
    originals: dict[str, pa.Table] = {}
    tables: list[tuple[str, pa.Table]] = []
    for f in files:
        rel = f.relative_to(path).as_posix()
        try:
            table = read_rows(f)
        except NabenchError as exc:  # one unreadable file never hides the others
            report.violations.append(Violation(rel, -1, "-", "file_readable", str(exc)))
            continue
        tables.append((rel, table))
        if f.parent.name == "original" and "id" in table.column_names:
            originals[f.name] = table
    for rel, table in tables:
        validate_table(table, rel, report, text)
        if table_kind(table) != "perturbed_item" or not originals:
            continue
        original = originals.get(Path(rel).name)
        known = _ids(original) if original is not None else pa.array([], pa.string())
        report.violations.extend(check_ids_in_original(table, known, rel))
        if original is not None and not rel.startswith("original/"):
            report.violations.extend(check_against_original(table, original, rel))
    return report


def _ids(table: pa.Table) -> pa.Array:
    return table.column("id").combine_chunks().cast(pa.string())


__all__ = ["ValidationReport", "Violation", "validate_path", "validate_table"]
