"""`nabench validate` on a selfknow build (`kind: selfknow` in build.json): the whole-folder
rules (every file, the staged `report/` included, matches its sha256 in build.json; the card
lists what exists), each config against its own row schema, and every classification
naming a task of the `tasks` config."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from nabench.core.bounded_read import read_parquet
from nabench.schemas.check import table_violations
from nabench.validate.build_tree import check_build_tree
from nabench.validate.invariants import ValidationReport, Violation

__all__ = ["validate_selfknow_dir"]

# config -> row kind (nabench.schemas.kinds)
CONFIG_KINDS = {
    "tasks": "selfknow_tasks",
    "quarantine": "selfknow_quarantine",
    "classifications": "selfknow_classifications",
}


def validate_selfknow_dir(path: Path) -> ValidationReport:
    report = ValidationReport()
    report.violations.extend(check_build_tree(path))
    tables: dict[str, pa.Table] = {}
    for config, kind in CONFIG_KINDS.items():
        for f in sorted((path / config).glob("*.parquet")):
            rel = f.relative_to(path).as_posix()
            try:
                table = read_parquet(f)
            except Exception as exc:  # one unreadable file never hides the others
                report.violations.append(Violation(rel, -1, "-", "file_readable", str(exc)))
                continue
            report.files += 1
            report.rows += table.num_rows
            report.violations.extend(table_violations(kind, table, rel))
            tables[config] = table
    tasks, verdicts = tables.get("tasks"), tables.get("classifications")
    if tasks is not None and verdicts is not None and "task_id" in verdicts.column_names:
        known = set(tasks.column("task_id").to_pylist())
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
    report.notes.append(f"{path}: selfknow build, {report.rows} rows in {', '.join(tables)}")
    return report
