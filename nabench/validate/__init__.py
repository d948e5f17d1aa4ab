"""Validators: eligibility audit, row invariants, and `validate_path` for files and folders."""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.core.bounded_read import read_parquet
from nabench.core.errors import NabenchError, first_line
from nabench.core.safe_load import UnsafeInput
from nabench.schemas.manifest import Manifest
from nabench.schemas.tables import ARROW_SCHEMAS
from nabench.validate.artifacts import check_artifacts, prompt_type_counts
from nabench.validate.build_tree import (
    build_kind,
    check_build_tree,
    check_no_symlinks,
    read_manifest,
)
from nabench.validate.contributions import is_contributions_dir, validate_contributions
from nabench.validate.invariants import (
    LETTER_SHARE_WARNING,
    ValidationReport,
    Violation,
    check_perturbed,
    check_schema,
    letter_distribution,
)
from nabench.validate.kinds import (
    KINDS,
    infer_kind,
    labels_violations,
    read_parts,
    validate_parts,
)
from nabench.validate.na_train import Parse


def read_rows(path: Path) -> pa.Table:
    """A parquet or JSONL file as an Arrow table (a clear error if unreadable)."""
    try:
        if path.suffix == ".parquet":
            return read_parquet(path)  # bounded before decoding (a 71 KB bomb took 2 GB)
        if path.suffix in {".jsonl", ".json"}:
            import pandas as pd

            frame = pd.read_json(path, lines=True, dtype=False, encoding="utf-8-sig")
            return pa.Table.from_pandas(frame, preserve_index=False)
    except UnsafeInput:
        raise
    except Exception as exc:
        why = _jsonl_problem(path) if path.suffix != ".parquet" else None
        raise NabenchError(
            f"{path}: {why or f'cannot read ({type(exc).__name__}: {first_line(exc)})'}"
        ) from None
    raise NabenchError(f"{path}: expected a .parquet or .jsonl file")


def _jsonl_problem(path: Path) -> str | None:
    """The line a JSONL file cannot be read at (pandas and Arrow name neither line nor id):
    no JSON object, or a field whose value's type differs from an earlier row's."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, ValueError):
        return None
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError as exc:
                return f"line {n}: invalid JSON ({exc})"
            if not isinstance(row, dict):
                return f"line {n}: {type(row).__name__} {row!r:.40}, not a JSON object"
            rows.append((n, row))
    for name in dict.fromkeys(k for _, row in rows for k in row):
        values = [row.get(name) for _, row in rows]
        if _mixes(values):  # the first row that cannot join the ones before it, and a witness
            i = bisect.bisect_left(range(len(values)), True, key=lambda k: _mixes(values[: k + 1]))
            j = next((j for j in range(i) if _mixes([values[j], values[i]])), None)
            return _at(rows[i], name) + ("" if j is None else f", where {_at(rows[j], name)}")
    return None


def _at(line: tuple[int, dict[str, Any]], name: str) -> str:
    (n, row), value = line, line[1][name]
    return f"line {n} (id {row.get('id')!r}) has {name!r} {value!r:.40} ({type(value).__name__})"


def _mixes(values: list[Any]) -> bool:
    """Whether Arrow cannot make one column of `values` (a number and text, say)."""
    try:
        pa.array(values)
    except (pa.ArrowException, ValueError, TypeError):
        return True
    return False


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
    if "error_type" in names:
        return "redux_annotation"
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
        report.violations.extend(labels_violations(table, where))
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


def validate_path(
    path: Path,
    *,
    sources: Mapping[str, str] | None = None,
    release: Path | None = None,
    limits: Any = None,
    parse: Parse | None = None,
) -> ValidationReport:
    """Validate a built folder (its kind's validator plus the whole-folder rules), one file,
    or contributed perturbations (a folder holding `contribution.yaml` files; `sources` maps
    a dataset name, or '*', to a location for id traceability, `release` is a built folder
    to check duplicates against, `limits` a `contributions.Limits`)."""
    report = ValidationReport()
    if not path.exists() and not path.is_symlink():
        raise NabenchError(f"{path} does not exist")
    if path.is_symlink():
        raise NabenchError(f"{path} is a symlink: validate the folder it points at")
    if path.is_file():
        validate_table(read_rows(path), path.name, report)
        return report
    if is_contributions_dir(path):
        result: ValidationReport = validate_contributions(
            path, sources=sources, release=release, limits=limits
        )
        return result
    return validate_build(path, parse)


def validate_build(root: Path, parse: Parse | None = None) -> ValidationReport:
    """A built folder: the kind its content is (checked against build.json's `kind`), that
    kind's validator on the tables read from disk, and the whole-folder rules."""
    declared, inferred = build_kind(root), infer_kind(root)
    if inferred is None and declared is None:
        _, _, problems = read_manifest(root)
        why = problems[0].message if problems else "build.json names no kind"
        manifest_says = why if (root / "build.json").is_file() else "no build.json"
        raise NabenchError(
            f"{root}: not a nabench build ({manifest_says}, and no config folder of an NA, "
            "artifacts, na-train or selfknow build)"
        )
    kind = inferred or str(declared)
    manifest, _, _ = read_manifest(root)
    tree = [*check_build_tree(root), *check_no_symlinks(root)]
    if declared is not None and declared != kind:
        tree.append(
            Violation(
                "build.json",
                -1,
                "-",
                "kind_matches_content",
                f"declares kind {declared!r} but holds a {kind!r} build (validated as {kind!r})",
            )
        )
    if kind not in KINDS:
        raise NabenchError(f"{root}: build.json names an unknown kind {kind!r}")
    unreadable = ValidationReport()
    parts = read_parts(root, unreadable)
    report = validate_parts(kind, parts, manifest or Manifest(), parse)
    report.violations[:0] = [*tree, *unreadable.violations]
    return report


__all__ = ["ValidationReport", "Violation", "validate_build", "validate_path", "validate_table"]
