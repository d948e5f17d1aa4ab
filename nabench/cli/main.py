"""The commands that live beside no library group of their own (list, build, validate, label,
agree, schema); `nabench.cli.root.COMMANDS` says where every command lives."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nabench.cli.model_flags import (
    QUIET,
    ModelFlags,
    model_options,
    protocol_option,
    run_options,
)
from nabench.cli.publish import check_push_target, publish_build
from nabench.cli.root import main
from nabench.core.errors import NabenchError
from nabench.core.out_guard import OutKind, check_folder
from nabench.evaluation import parse_answer
from nabench.label.agree import agreement
from nabench.pipelines.label import run_label_command
from nabench.pipelines.rebuild import build_source, compare_with_rebuild
from nabench.pipelines.registry import load_recipe, recipe_summary, run_recipe, shipped_recipes
from nabench.pipelines.skeleton import BuildOptions
from nabench.schemas.export import json_schemas, write_json_schemas
from nabench.validate import ValidationReport, Violation, validate_path
from nabench.validate.contributions import is_contributions_dir, parse_sources


@main.command("list")
def list_cmd() -> None:
    """List the shipped recipes, one line each."""

    for path in shipped_recipes().values():
        click.echo(recipe_summary(path))


def _rebuild_violations(
    path: Path, located: dict[str, str], report: ValidationReport
) -> list[Violation]:
    """The rows that differ from a rebuild; a build that cannot be rebuilt fails too (the
    comparison was asked for), after the violations found without it are listed."""
    try:
        location = build_source(path, located)
        found = compare_with_rebuild(path, location)
    except NabenchError as exc:
        return [Violation(path.name, -1, "-", "rebuild_matches", f"not compared: {exc}")]
    report.notes.append(f"compared every row with a rebuild from {location}")
    return found


@main.command()
@click.argument("recipe")
@click.option("--source", "source", help="Local Hub-layout folder, data file or Hub dataset id.")
@click.option("--out", type=click.Path(path_type=Path), help="Output folder [build/<recipe>].")
@click.option("--split", "splits", multiple=True, help="Split(s) to build [recipe's].")
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N items per split.")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Use a seeded sample of N items per split that pass the eligibility audit, "
    "stratified by subject.",
)
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), help="Override the recipe seed.")
@protocol_option(
    "build", "A paper's protocol preset (e.g. artifacts-paper: raw source text) [nabench]."
)
@click.option(
    "--labels",
    help="'none' (all eligible items), 'llm' (label with the recipe's model, however long "
    "it takes) or a labels file [recipe's].",
)
@click.option("--yes", is_flag=True, help="Start a long model job without asking (see --labels).")
@click.option(
    "--strict", is_flag=True, help="Fail on malformed source rows instead of quarantining."
)
@click.option(
    "--cache", type=click.Path(path_type=Path), help="LLM response cache (labeling, sampling)."
)
@click.option("--push", is_flag=True, help="Publish the build (see `nabench publish`).")
@click.option(
    "--repo-id", help="Target repo for --push [recipe's if yours, else TOKEN_OWNER/<recipe>]."
)
@click.option("--to", "push_to", help="--push target 'git:PATH' instead of the Hub.")
@click.option("--dry-run", is_flag=True, help="With --push: print the publish plan only.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a recipe field before validation (dotted key, YAML value): sampler.n=2.",
)
@QUIET
def build(
    recipe: str,
    source: str | None,
    out: Path | None,
    splits: tuple[str, ...],
    limit: int | None,
    sample: int | None,
    seed: int | None,
    protocol: str | None,
    labels: str | None,
    yes: bool,
    strict: bool,
    cache: Path | None,
    push: bool,
    repo_id: str | None,
    push_to: str | None,
    dry_run: bool,
    overrides: tuple[str, ...],
    quiet: bool,
) -> None:
    """Build a recipe (shipped name or YAML path) into the Hub repository layout.

    With --push the finished build is published as the recipe's version (`nabench publish`).
    """

    spec = load_recipe(recipe, overrides)
    if push and not dry_run:
        check_push_target(push_to)  # a missing token or network fails now, not after the build
    result = run_recipe(
        spec,
        BuildOptions(
            source=source,
            out=out,
            splits=splits or None,
            limit=limit,
            sample=sample,
            seed=seed,
            protocol=protocol,
            labels=labels,
            strict=strict,
            cache=cache,
            progress=not quiet,
            yes=yes,
        ),
    )
    for config, per_split in result.counts.items():
        sizes = ", ".join(f"{s}={n}" for s, n in per_split.items())
        click.echo(f"{config:<40} {sizes}")
    reasons = ", ".join(f"{k}={v}" for k, v in result.exclusions["by_reason"].items()) or "none"
    click.echo(f"excluded: {result.exclusions['total']} ({reasons})")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"wrote {result.out}")
    if push:
        publish_build(
            result.out,
            repo_id,
            compare=False,  # built from that source a moment ago, in this process
            dry_run=dry_run,
            to=push_to,
            private=spec.publish.private,
        )


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
        path, sources=None if rebuild else located or None, release=release, parse=parse_answer
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


@main.command()
@click.argument("recipe")
@click.option("--source", "source", help="Local Hub-layout folder, data file or Hub dataset id.")
@click.option("--split", "splits", multiple=True, help="Split(s) to label [recipe's].")
@click.option("--limit", type=click.IntRange(min=1), help="Label only the first N items per split.")
@click.option("--guideline", default=None, help="Guideline name or path [recipe's].")
@model_options()
@run_options(max_tokens=128, chunk_size=16)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Labels parquet.")
def label(
    recipe: str,
    source: str | None,
    splits: tuple[str, ...],
    limit: int | None,
    guideline: str | None,
    max_attempts: int,
    max_tokens: int,
    chunk_size: int,
    model_flags: ModelFlags,
    out: Path,
    quiet: bool,
) -> None:
    """Label a recipe's eligible items for NA-applicability with an LLM (cached, resumable)."""

    summary = run_label_command(
        recipe,
        source=source,
        splits=splits,
        limit=limit,
        guideline=guideline,
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        chunk_size=chunk_size,
        model_flags=model_flags,
        out=out,
        progress=not quiet,
    )
    click.echo(
        f"labeled {summary['n']} item(s): {summary['applicable']} applicable, "
        f"{summary['not_applicable']} not, {summary['invalid']} invalid; "
        f"calls={summary['calls']} cache_hits={summary['cache_hits']} -> {out}"
    )


@main.command()
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("human", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
def agree(labels: Path, human: Path, as_json: bool, seed: int) -> None:
    """Agreement of LLM labels with human labels: n, raw agreement, Cohen's kappa (95% CI)."""
    import json
    import math

    result = agreement(labels, human, seed=seed)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
        return
    click.echo(f"n = {result.n}")
    click.echo(f"raw agreement = {result.agreement:.3f}")
    kappa = "undefined" if math.isnan(result.kappa) else f"{result.kappa:.3f}"
    bounds = (result.ci_low, result.ci_high)
    ci = "undefined" if any(map(math.isnan, bounds)) else "{:.3f} to {:.3f}".format(*bounds)
    click.echo(f"Cohen's kappa = {kappa} (95% CI {ci})")
    if result.note:
        click.echo(f"note: {result.note}")
    click.echo("confusion (rows: LLM, columns: human):")
    for row, cells in result.confusion.items():
        click.echo(f"  {row:<22} " + "  ".join(f"{k}={v}" for k, v in cells.items()))
    if any(result.excluded.values()):
        click.echo("not compared: " + ", ".join(f"{k}={v}" for k, v in result.excluded.items()))


SCHEMA_OUT = OutKind(
    "a JSON Schema export (<kind>.schema.json)",
    lambda rel, _path: "/" not in rel and rel.endswith(".schema.json"),
)


@main.group()
def schema() -> None:
    """JSON Schemas of nabench's row formats."""


@schema.command("export")
@click.option("--out", type=click.Path(path_type=Path), help="Folder to write *.schema.json into.")
def schema_export(out: Path | None) -> None:
    """Export the JSON Schema of every row model (stdout, or files with --out)."""
    import json

    if out is None:
        click.echo(json.dumps(json_schemas(), indent=2))
    else:
        check_folder(out, SCHEMA_OUT)  # the one --out guard: never a folder of other files
        for written in write_json_schemas(out):
            click.echo(f"wrote {written}")
