"""One validator per recipe kind, over the tables of a build.

The build calls it on its staged tables before writing a manifest, and `nabench validate`
calls the same function on the tables it reads from disk (plus the whole-folder rules, which
need the written tree). A built folder's kind is inferred from its content and checked
against the kind build.json declares, so editing `kind` never switches the row rules off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.core.bounded_read import read_parquet
from nabench.core.errors import NabenchError
from nabench.label.files import check_labels
from nabench.perturb import BUILDERS
from nabench.schemas.check import table_violations
from nabench.schemas.manifest import Manifest
from nabench.validate.artifacts import check_artifacts, prompt_type_counts
from nabench.validate.invariants import (
    LETTER_SHARE_WARNING,
    PERTURBED_RULES,
    ValidationReport,
    Violation,
    check_schema,
    letter_distribution,
    row_view,
    run_rules,
)
from nabench.validate.na_train import Parse, check_na_train

# Configs of an NA build that hold no perturbed items.
NA_SIDE_CONFIGS = frozenset({"excluded", "labels", "redux"})
EXCLUDED, FEWSHOT, REDUX = "excluded", "fewshot", "redux"
# selfknow config -> row kind (nabench.schemas.kinds)
SELFKNOW_CONFIGS = {
    "tasks": "selfknow_tasks",
    "quarantine": "selfknow_quarantine",
    "classifications": "selfknow_classifications",
}
NA_TRAIN_CONFIGS = ("sft", "dpo", "samples", "discarded")
KINDS = ("na", "artifacts", "na-train", "selfknow")


class ConfigTable(Protocol):
    """One config/split of a build (a `StagedTable`, or a `Part` read from disk)."""

    @property
    def config(self) -> str: ...
    @property
    def split(self) -> str: ...
    @property
    def table(self) -> pa.Table: ...
    @property
    def relpath(self) -> str: ...


@dataclass(frozen=True)
class Part:
    config: str
    split: str
    table: pa.Table
    relpath: str


def _count(report: ValidationReport, part: ConfigTable) -> None:
    report.files += 1
    report.rows += part.table.num_rows


def na_inserted_texts(parts: Sequence[ConfigTable]) -> tuple[str, ...]:
    """The NA phrasings the build's rows insert (an item holding one elsewhere is a stray
    NA option); read from the rows, so the build and a validation of its files agree."""
    none_variants = {k for k, cls in BUILDERS.items() if cls.inserted_reason == "has_none_option"}
    texts: set[str] = set()
    for part in parts:
        if part.config in NA_SIDE_CONFIGS or "na_text" not in part.table.column_names:
            continue
        if "variant" not in part.table.column_names:
            continue
        for variant, text in zip(
            part.table.column("variant").to_pylist(),
            part.table.column("na_text").to_pylist(),
            strict=True,
        ):
            if variant in none_variants and isinstance(text, str):
                texts.add(text)
    return tuple(sorted(texts))


def labels_violations(table: pa.Table, where: str) -> list[Violation]:
    """A labels table breaks no rule `agree` and `build --labels` read labels by (distinct,
    non-blank ids; booleans or null): `validate` said OK to duplicates and "yes"."""
    try:
        check_labels(table.to_pandas(), where)
    except NabenchError as exc:
        return [Violation(where, -1, "", "labels", str(exc).removeprefix(f"{where}: "))]
    return []


def validate_na(parts: Sequence[ConfigTable], seed: int | None) -> ValidationReport:
    """Every rule of an NA build: the row schema, the row invariants of each perturbed config
    (`PERTURBED_RULES`, against the `original` config of its split and the build's `seed`),
    the `excluded` and `redux` schemas.
    `report.rules` are the rules that ran (what the card lists)."""
    report = ValidationReport()
    originals = {p.split: p.table for p in parts if p.config == "original"}
    extra = na_inserted_texts(parts)
    ran: set[str] = set()
    for part in parts:
        _count(report, part)
        if part.config == "labels":
            report.violations.extend(labels_violations(part.table, part.relpath))
            continue
        if part.config in (EXCLUDED, REDUX):  # side tables: their own row schema
            row_kind = "excluded_item" if part.config == EXCLUDED else "redux_annotation"
            report.violations.extend(check_schema(part.table, row_kind, part.relpath))
            continue
        schema = check_schema(part.table, "perturbed_item", part.relpath)
        report.violations.extend(schema)
        if schema:  # the rules read the columns the schema just found broken
            continue
        rows = row_view(part.table, part.config, originals.get(part.split), extra, seed)
        violations, names = run_rules(rows, PERTURBED_RULES, part.relpath)
        report.violations.extend(violations)
        ran.update(names)
        _letter_notes(report, part)
    report.rules = [r for r in PERTURBED_RULES if r.name in ran]
    return report


def _letter_notes(report: ValidationReport, part: ConfigTable) -> None:
    shares = letter_distribution(part.table)
    pretty = " ".join(f"{k}={v:.1%}" for k, v in shares.items())
    report.notes.append(f"{part.relpath}: {part.table.num_rows} rows, answer letters {pretty}")
    for letter, share in shares.items():
        if share > LETTER_SHARE_WARNING:
            report.notes.append(
                f"warning: {part.relpath}: letter {letter} is the key in {share:.1%}"
            )


def validate_artifacts(
    parts: Sequence[ConfigTable],
    *,
    text: str = "stripped",
    k: int | None = None,
    pool: pa.Table | None = None,
) -> ValidationReport:
    """Artifact invariants of every prompt config (few-shot questions searched for in `pool`,
    else in the build's own `fewshot` config) and the schema of `excluded` / `fewshot`."""
    report = ValidationReport()
    if pool is None:
        pool = next((p.table for p in parts if p.config == FEWSHOT), None)
    questions: dict[str, str] | None = None
    if pool is not None and {"id", "question"} <= set(pool.column_names):
        ids = pool.column("id").to_pylist()
        questions = dict(zip(ids, pool.column("question").to_pylist(), strict=True))
    for part in parts:
        _count(report, part)
        if part.config == EXCLUDED:
            report.violations.extend(check_schema(part.table, "excluded_item", part.relpath))
        elif part.config == FEWSHOT:
            report.violations.extend(check_schema(part.table, "item", part.relpath))
        else:
            report.violations.extend(
                check_artifacts(part.table, part.relpath, k=k, questions=questions, text=text)
            )
            types = " ".join(f"{a}={b}" for a, b in prompt_type_counts(part.table).items())
            report.notes.append(f"{part.relpath}: {part.table.num_rows} rows, prompt types {types}")
    return report


def validate_selfknow(parts: Sequence[ConfigTable]) -> ValidationReport:
    """Each selfknow config against its row schema; every classification names a task."""
    report = ValidationReport()
    tables: dict[str, pa.Table] = {}
    for part in parts:
        kind = SELFKNOW_CONFIGS.get(part.config)
        if kind is None:
            continue
        _count(report, part)
        report.violations.extend(table_violations(kind, part.table, part.relpath))
        tables[part.config] = part.table
    tasks, verdicts = tables.get("tasks"), tables.get("classifications")
    if tasks is not None and verdicts is not None and "task_id" in verdicts.column_names:
        known = (
            set(tasks.column("task_id").to_pylist()) if "task_id" in tasks.column_names else set()
        )
        for i, task_id in enumerate(verdicts.column("task_id").to_pylist()):
            if task_id not in known:
                report.violations.append(
                    Violation(
                        "classifications",
                        i,
                        str(task_id),
                        "classified_task_known",
                        "classifies a task that is not in the tasks config",
                    )
                )
    report.notes.append(f"selfknow build, {report.rows} rows in {', '.join(tables)}")
    return report


def validate_na_train(
    parts: Sequence[ConfigTable], parse: Parse, eval_index: Any = None
) -> ValidationReport:
    """Every invariant of an `na-train` build (contamination only with the evaluation index,
    which the build has; a validation from disk says it was checked at build time)."""
    tables: dict[str, list[pa.Table]] = {}
    for part in parts:
        if part.config in NA_TRAIN_CONFIGS:
            tables.setdefault(part.config, []).append(part.table)
    merged = {c: pa.concat_tables(ts) for c, ts in tables.items()}
    if "samples" not in merged:
        raise NabenchError("an na-train build without a samples config")
    report = ValidationReport(files=len(merged), rows=sum(t.num_rows for t in merged.values()))
    report.violations = check_na_train(merged, parse, eval_index)
    report.notes.append(
        f"na-train build, {report.rows} rows in {', '.join(merged)}"
        + ("" if eval_index is not None else "; contamination was checked at build time")
    )
    return report


# -- reading a build from disk ------------------------------------------------------------


def split_of(filename: str) -> str:
    """`test-00000-of-00001.parquet` -> `test` (the Hub layout's file name of a split)."""
    return filename.split("-", 1)[0]


def config_files(root: Path) -> dict[str, list[Path]]:
    """Parquet files per top-level config folder (hidden ones and `report/` left out)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(root.glob("*/*.parquet")):
        config = path.parent.name
        if not config.startswith(".") and not path.name.startswith("."):
            out.setdefault(config, []).append(path)
    return out


def _columns(path: Path) -> set[str]:
    try:
        return set(pq.read_schema(path).names)
    except (OSError, ValueError, pa.ArrowException):
        return set()


def infer_kind(root: Path) -> str | None:
    """The kind a folder's content is (None: it holds no build of any kind)."""
    files = config_files(root)
    if "tasks" in files or "classifications" in files:
        return "selfknow"
    if "samples" in files:
        return "na-train"
    columns = set().union(*(_columns(fs[0]) for fs in files.values())) if files else set()
    if "prompt_type" in columns:
        return "artifacts"
    if "variant" in columns and "original" in files:
        return "na"
    return None


def read_parts(root: Path, report: ValidationReport) -> list[Part]:
    """Every config file of a build as a table; an unreadable one is a violation, never a
    reason to skip the others."""
    parts: list[Part] = []
    for config, paths in config_files(root).items():
        for path in paths:
            rel = path.relative_to(root).as_posix()
            try:
                table = read_parquet(path)  # bounded before decoding (bombs)
            except Exception as exc:  # one unreadable file never hides the others
                report.violations.append(
                    Violation(
                        rel, -1, "-", "file_readable", f"cannot read ({type(exc).__name__}: {exc})"
                    )
                )
                continue
            parts.append(Part(config, split_of(path.name), table, rel))
    return parts


def validate_parts(
    kind: str, parts: Sequence[ConfigTable], manifest: Manifest, parse: Parse | None
) -> ValidationReport:
    """The validator of `kind` on tables read from disk (settings from the build's manifest)."""
    if kind == "na":
        return validate_na(parts, manifest.seed)
    if kind == "artifacts":
        return validate_artifacts(parts, text=manifest.text or "stripped")
    if kind == "selfknow":
        return validate_selfknow(parts)
    if parse is None:
        raise NabenchError("validating an na-train build needs the answer parser")
    return validate_na_train(parts, parse)


__all__ = [
    "KINDS",
    "ConfigTable",
    "Part",
    "infer_kind",
    "read_parts",
    "validate_artifacts",
    "validate_na",
    "validate_na_train",
    "validate_parts",
    "validate_selfknow",
]
