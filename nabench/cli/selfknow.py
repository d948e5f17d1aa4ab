"""``selfknow`` command group: generate and classify self-knowledge tasks, score result tables."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from nabench.cli.group import NabenchGroup
from nabench.cli.model_flags import FiniteRange, ModelFlags, model_options, run_options
from nabench.core.atomic import atomic_file
from nabench.core.errors import NabenchError
from nabench.core.out_guard import (
    OutFile,
    beside,
    check_cache,
    check_file,
    check_folder,
    json_with,
    parquet_with,
)
from nabench.llm import ResponseCache, RunStats, write_stats
from nabench.selfknow.classify import CLASSIFICATIONS_ARROW, ClassificationSettings, classify_tasks
from nabench.selfknow.generate import (
    QUARANTINE_ARROW,
    TASKS_ARROW,
    GenerationSettings,
    generate_tasks,
)
from nabench.selfknow.metrics import MATCH_MODES, Match, require_scored, selfknow_metrics
from nabench.selfknow.report import (
    REPORT_OUT,
    format_metrics_text,
    metrics_to_dict,
    write_report,
)
from nabench.selfknow.table import CANONICAL_COLUMNS, load_selfknow_table, parse_column_mapping
from nabench.stage.hub_layout import write_parquet

if TYPE_CHECKING:
    from nabench.llm import Backend, ResponseCache


@click.group(name="selfknow", cls=NabenchGroup)
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
    if out is not None:  # before the table is read: a wrong --out costs nothing
        check_folder(out, REPORT_OUT, [("the table", table)])
    frame = load_selfknow_table(table, parse_column_mapping(columns))
    primary = selfknow_metrics(frame, match=match)
    require_scored(primary, str(table))
    other: Match = "type" if match == "reason" else "reason"
    alternative = selfknow_metrics(frame, match=other)
    if out is not None:
        try:
            write_report(out, primary, alternative, title=f"Self-knowledge metrics: {table.name}")
        except OSError as exc:
            raise NabenchError(f"cannot write report to {out}: {exc.strerror or exc}") from exc
    if as_json:
        click.echo(json.dumps(metrics_to_dict(primary, alternative), ensure_ascii=False))
    else:
        click.echo(format_metrics_text(primary, alternative, title=str(table)), nl=False)


# -- generate / classify -------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _model_options(func: F) -> F:
    """The shared model and run flags (nabench.cli.model_flags) plus --seed."""
    func = run_options(max_tokens=256, chunk_size=8)(func)
    func = click.option("--seed", type=int, default=0, show_default=True)(func)
    return model_options(
        cache_help="Response cache (SQLite) [selfknow.cache.sqlite beside --out]."
    )(func)


def _with_model(
    flags: ModelFlags, out: Path, kind: OutFile, run: Callable[[Backend, ResponseCache], T]
) -> T:
    """Open the response cache (default: beside --out) and the backend, run, close both."""
    cache = flags.cache_path(out.parent / "selfknow.cache.sqlite")
    check_cache(cache, out, kind)  # the table or its side files would overwrite it later
    with (
        ResponseCache(cache) as store,
        flags.open_backend() as backend,
    ):
        return run(backend, store)


def _write_table(table: Any, path: Path) -> None:
    """Parquet with the Hub features metadata, written atomically."""

    with atomic_file(path) as tmp:
        write_parquet(table, tmp)


# What generate and classify may replace: only their own tables and run statistics.
_STATS = (".stats.json", json_with(f.name for f in fields(RunStats)))
TASKS_OUT = OutFile(
    "`nabench selfknow generate`",
    ".parquet",
    parquet_with(TASKS_ARROW.names),
    ((".quarantine.parquet", parquet_with(QUARANTINE_ARROW.names)), _STATS),
)
CLASSIFIED_OUT = OutFile(
    "`nabench selfknow classify`", ".parquet", parquet_with(CLASSIFICATIONS_ARROW.names), (_STATS,)
)


@selfknow.command("generate")
@_model_options
@click.option(
    "--n-per-class",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Tasks per class (feasible, infeasible) and per style, spread evenly over the types.",
)
@click.option(
    "--style",
    "styles",
    type=click.Choice(["vanilla", "challenge"]),
    multiple=True,
    help="Prompt style(s); repeat for both [vanilla].",
)
@click.option("--temperature", type=FiniteRange(min=0), default=1.0, show_default=True)
@click.option("--max-task-chars", type=click.IntRange(min=1), default=400, show_default=True)
@click.option("--max-analysis-chars", type=click.IntRange(min=1), default=300, show_default=True)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Tasks asked for in one request (1: one task per request).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("tasks.parquet"),
    show_default=True,
    help="Tasks parquet; <stem>.quarantine.parquet and <stem>.stats.json are written beside it.",
)
def generate_command(
    model_flags: ModelFlags,
    seed: int,
    max_tokens: int,
    max_attempts: int,
    chunk_size: int,
    quiet: bool,
    n_per_class: int,
    styles: tuple[str, ...],
    temperature: float,
    max_task_chars: int,
    max_analysis_chars: int,
    batch_size: int,
    out: Path,
) -> None:
    """Generate a balanced set of feasible/infeasible tasks; quarantine malformed ones."""
    check_file(out, TASKS_OUT)  # before any model call
    settings = GenerationSettings(
        n_per_class=n_per_class,
        styles=tuple(styles or ("vanilla",)),  # type: ignore[arg-type]
        seed=seed,
        temperature=temperature,
        max_tokens=max_tokens,
        max_task_chars=max_task_chars,
        max_analysis_chars=max_analysis_chars,
        max_attempts=max_attempts,
        batch_size=batch_size,
        chunk_size=chunk_size,
    )
    result = _with_model(
        model_flags,
        out,
        TASKS_OUT,
        lambda llm, store: generate_tasks(llm, store, settings, progress=not quiet),
    )
    quarantine_path = beside(out, ".quarantine.parquet")
    stats_path = beside(out, ".stats.json")
    _write_table(result.tasks, out)
    _write_table(result.quarantine, quarantine_path)
    write_stats(result.stats, stats_path)
    extra = result.stats.extra
    click.echo(
        f"requests: {result.stats.total} (model calls {result.stats.calls}, "
        f"cache hits {result.stats.cache_hits}); valid JSON: {extra['valid']}, "
        f"invalid: {extra['invalid']}"
    )
    reasons = ", ".join(f"{k}={v}" for k, v in result.quarantine_counts.items()) or "none"
    click.echo(
        f"kept: {result.tasks.num_rows}; quarantined: {result.quarantine.num_rows} ({reasons})"
    )
    click.echo(f"wrote {out}, {quarantine_path}, {stats_path}")


@selfknow.command("classify")
@click.argument("tasks", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@_model_options
@click.option(
    "--style",
    type=click.Choice(["vanilla", "challenge", "same"]),
    default="same",
    show_default=True,
    help="Prompt style; 'same': the style each task was generated with.",
)
@click.option("--temperature", type=FiniteRange(min=0), default=0.0, show_default=True)
@click.option("--max-answer-chars", type=click.IntRange(min=1), default=400, show_default=True)
@click.option("--max-analysis-chars", type=click.IntRange(min=1), default=300, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("classifications.parquet"),
    show_default=True,
    help="Classifications parquet (canonical columns: 'nabench selfknow metrics' reads it); "
    "<stem>.stats.json is written beside it.",
)
def classify_command(
    tasks: Path,
    model_flags: ModelFlags,
    seed: int,
    max_tokens: int,
    max_attempts: int,
    chunk_size: int,
    quiet: bool,
    style: str,
    temperature: float,
    max_answer_chars: int,
    max_analysis_chars: int,
    out: Path,
) -> None:
    """Classify every task of TASKS (a tasks parquet) with the model: answer or refuse + reason.

    A model other than the generator's gives cross-model classification (column cross_model).
    """
    import pandas as pd

    check_file(out, CLASSIFIED_OUT)  # before any model call: never the tasks themselves
    try:
        frame = pd.read_parquet(tasks)
    except (OSError, ValueError) as exc:
        raise NabenchError(f"cannot read tasks {tasks}: {exc}") from exc
    settings = ClassificationSettings(
        style=style,  # type: ignore[arg-type]
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        max_answer_chars=max_answer_chars,
        max_analysis_chars=max_analysis_chars,
        max_attempts=max_attempts,
        chunk_size=chunk_size,
    )
    result = _with_model(
        model_flags,
        out,
        CLASSIFIED_OUT,
        lambda llm, store: classify_tasks(llm, store, frame, settings, progress=not quiet),
    )
    stats_path = beside(out, ".stats.json")
    _write_table(result.table, out)
    write_stats(result.stats, stats_path)
    summary = result.summary
    click.echo(
        f"tasks: {summary.total} (model calls {result.stats.calls}, cache hits "
        f"{result.stats.cache_hits}); valid JSON: {summary.valid}, invalid: {summary.invalid}"
    )
    click.echo(
        f"classes: {summary.by_class}; reasons in taxonomy: {summary.known_reasons}, "
        f"not in taxonomy: {sum(summary.unknown_reasons.values())}"
    )
    click.echo(f"wrote {out}, {stats_path}")
