"""``selfknow`` command group: score self-knowledge (Line of Duty) result tables."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nabench.errors import NabenchError
from nabench.selfknow.metrics import MATCH_MODES, Match, selfknow_metrics
from nabench.selfknow.report import format_metrics_text, metrics_to_dict, write_report
from nabench.selfknow.table import CANONICAL_COLUMNS, load_selfknow_table, parse_column_mapping


@click.group(name="selfknow")
def selfknow() -> None:
    """Self-knowledge (Line of Duty) tables and metrics."""


@selfknow.command("metrics")
@click.argument("table", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--columns",
    "columns",
    multiple=True,
    metavar="CANONICAL=SOURCE,...",
    help=(
        "Map source columns to canonical ones, e.g. "
        "'generated_class=Gen Class,classified_class=Cls Class'. Canonical names: "
        + ", ".join(CANONICAL_COLUMNS)
        + ". May be repeated. The released Line of Duty layout is detected without it."
    ),
)
@click.option(
    "--match",
    type=click.Choice(MATCH_MODES),
    default="reason",
    show_default=True,
    help="reason: same reason needed (paper); type: same self-knowledge type is enough.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write report.md, metrics.json and a PNG bar chart per type into this folder.",
)
def metrics_command(
    table: Path, columns: tuple[str, ...], match: Match, as_json: bool, out: Path | None
) -> None:
    """Score TABLE (CSV, TSV, XLSX or parquet) and print the self-knowledge metrics.

    Top-level numbers and per-type metrics use --match; the JSON 'variants' object and the
    text table show both matching modes, labelled.
    """
    try:
        frame = load_selfknow_table(table, parse_column_mapping(columns))
        primary = selfknow_metrics(frame, match=match)
        other: Match = "type" if match == "reason" else "reason"
        alternative = selfknow_metrics(frame, match=other)
        if out is not None:
            try:
                write_report(
                    out, primary, alternative, title=f"Self-knowledge metrics: {table.name}"
                )
            except OSError as exc:
                raise NabenchError(f"cannot write report to {out}: {exc.strerror or exc}") from exc
    except NabenchError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(exc.exit_code) from exc
    if as_json:
        click.echo(json.dumps(metrics_to_dict(primary, alternative), ensure_ascii=False))
    else:
        click.echo(format_metrics_text(primary, alternative, title=str(table)), nl=False)


if __name__ == "__main__":
    selfknow(prog_name="nabench selfknow")
