"""`nabench validate`: in a module of its own so that checking a folder imports the validators
only, not the build, publish or evaluation stack (a second of start-up); the
rebuild (`--source`) and the answer parser (na-train builds) are imported when used."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nabench.cli.root import main
from nabench.core.errors import NabenchError
from nabench.validate import ValidationReport, Violation, validate_path
from nabench.validate.contributions import is_contributions_dir, parse_sources


def _parse_answer(text: str, n_choices: int) -> str | None:
    """The evaluator's answer parser, imported on first use (na-train builds only)."""
    from nabench.evaluation.parsing import parse_answer

    return parse_answer(text, n_choices)


def _rebuild_violations(
    path: Path, located: dict[str, str], report: ValidationReport
) -> list[Violation]:
    """The rows that differ from a rebuild; a build that cannot be rebuilt fails too (the
    comparison was asked for), after the violations found without it are listed."""
    from nabench.pipelines.rebuild import build_source, compare_with_rebuild

    try:
        location = build_source(path, located)
        found = compare_with_rebuild(path, location)
    except NabenchError as exc:
        return [Violation(path.name, -1, "-", "rebuild_matches", f"not compared: {exc}")]
    report.notes.append(f"compared every row with a rebuild from {location}")
    return found


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--max-errors", default=50, show_default=True, help="Violations printed at most.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="[DATASET=]LOCATION",
    help="A build: rebuild it from this source (path or Hub id) and compare every row. "
    "Contributions: source data to trace ids to (e.g. mmlu=../shared/data/cais__mmlu).",
)
@click.option(
    "--release",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Contributions: a built release to check duplicates against.",
)
def validate(path: Path, max_errors: int, sources: tuple[str, ...], release: Path | None) -> None:
    """Check a built folder, a parquet/JSONL file or a contributions/ folder; exit 1 on any
    violation."""

    located = parse_sources(sources)
    rebuild = bool(located) and path.is_dir() and not is_contributions_dir(path)
    report = validate_path(
        path, sources=None if rebuild else located or None, release=release, parse=_parse_answer
    )
    if rebuild:  # a build: --source is what to rebuild it from
        report.violations += _rebuild_violations(path, located, report)
    for line in report.notes:
        click.echo(line)
    for violation in report.violations[:max_errors]:
        click.echo(str(violation), err=True)
    hidden = len(report.violations) - max_errors
    if hidden > 0:
        click.echo(f"... and {hidden} more violation(s)", err=True)
    if report.violations:
        click.echo(
            f"FAILED: {len(report.violations)} violation(s) in {report.rows} row(s)", err=True
        )
        sys.exit(1)
    click.echo(f"OK: {report.rows} row(s) in {report.files} file(s), 0 violations")
