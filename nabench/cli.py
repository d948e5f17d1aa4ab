"""The `nabench` command: one click group; every command is a thin layer over a library call."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nabench import __version__
from nabench.errors import NabenchError


class _Group(click.Group):
    """Turns NabenchError into one readable line and a non-zero exit; --debug shows tracebacks."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except NabenchError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
                err=True,
            )
            sys.exit(3)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="nabench")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Build, validate, label, evaluate and publish perturbed multiple-choice benchmarks."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.command("list")
def list_cmd() -> None:
    """List the shipped recipes, one line each."""
    from nabench.recipes import recipe_summary, shipped_recipes

    for path in shipped_recipes().values():
        click.echo(recipe_summary(path))


@main.command()
@click.argument("recipe")
@click.option("--source", "source", help="Local Hub-layout folder, data file or Hub dataset id.")
@click.option("--out", type=click.Path(path_type=Path), help="Output folder [build/<recipe>].")
@click.option("--split", "splits", multiple=True, help="Split(s) to build [recipe's].")
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N items per split.")
@click.option("--seed", type=int, help="Override the recipe seed.")
@click.option("--labels", help="'none' (all eligible items) or a labels file [recipe's].")
@click.option(
    "--strict", is_flag=True, help="Fail on malformed source rows instead of quarantining."
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def build(
    recipe: str,
    source: str | None,
    out: Path | None,
    splits: tuple[str, ...],
    limit: int | None,
    seed: int | None,
    labels: str | None,
    strict: bool,
    quiet: bool,
) -> None:
    """Build a recipe (shipped name or YAML path) into the Hub repository layout."""
    from nabench.build import BuildOptions, run_recipe
    from nabench.recipes import load_recipe

    spec = load_recipe(recipe)
    result = run_recipe(
        spec,
        BuildOptions(
            source=source,
            out=out,
            splits=splits or None,
            limit=limit,
            seed=seed,
            labels=labels,
            strict=strict,
            progress=not quiet,
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


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--max-errors", default=50, show_default=True, help="Violations printed at most.")
def validate(path: Path, max_errors: int) -> None:
    """Check a built folder, a parquet file or a JSONL file; exit 1 on any violation."""
    from nabench.validate import validate_path

    report = validate_path(path)
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


@main.group()
def schema() -> None:
    """JSON Schemas of nabench's row formats."""


@schema.command("export")
@click.option("--out", type=click.Path(path_type=Path), help="Folder to write *.schema.json into.")
def schema_export(out: Path | None) -> None:
    """Export the JSON Schema of every row model (stdout, or files with --out)."""
    import json

    from nabench.schemas.export import json_schemas, write_json_schemas

    if out is None:
        click.echo(json.dumps(json_schemas(), indent=2))
    else:
        for written in write_json_schemas(out):
            click.echo(f"wrote {written}")


def _register_subcommands() -> None:
    """Command groups that live beside their library code."""
    from nabench.selfknow.cli import selfknow

    main.add_command(selfknow)


_register_subcommands()

if __name__ == "__main__":
    main()
