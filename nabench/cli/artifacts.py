"""`nabench artifacts ...`: commands of the MCQA artifact suite.

Register with ``main.add_command(artifacts)`` (``from nabench.cli.artifacts import
artifacts``) in `nabench/cli.py`; also runnable as ``python -m nabench.cli.artifacts``.
"""

from __future__ import annotations

from pathlib import Path

import click

from nabench.cli.group import NabenchGroup
from nabench.cli.model_flags import ModelFlags, model_options, run_options
from nabench.llm import ResponseCache
from nabench.pipelines.question_inference import infer_questions


@click.group(name="artifacts", cls=NabenchGroup)
def artifacts() -> None:
    """MCQA artifact suite (choices-only, memorization, individual prior, question inference)."""


@artifacts.command("infer-questions")
@click.argument("built_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@model_options()
@click.option(
    "--limit", type=click.IntRange(min=2), help="Only the first N qi_step1 rows per split."
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Output folder [BUILT_DIR]."
)
@run_options(max_tokens=None, max_attempts=False)
def infer_questions_cmd(
    built_dir: Path,
    model_flags: ModelFlags,
    limit: int | None,
    out: Path | None,
    max_tokens: int | None,
    quiet: bool,
) -> None:
    """Run question-inference step 1 on BUILT_DIR, then add `qi_step2`, `qi_random_question`
    and `qi_step1_outputs` to the build (re-staged atomically)."""

    with (
        model_flags.open_backend() as llm,
        ResponseCache(model_flags.cache_path()) as responses,
    ):
        result = infer_questions(
            built_dir,
            llm,
            responses,
            out=out,
            limit=limit,
            max_tokens=max_tokens,
            progress=not quiet,
        )
    for config, per_split in result.counts.items():
        sizes = ", ".join(f"{s}={n}" for s, n in per_split.items())
        click.echo(f"{config:<24} {sizes}")
    stats = result.stats
    click.echo(
        f"items {result.items}: {result.inferred} inferred question(s), {result.missing} without "
        f"one, {result.errors} model error(s); {stats.calls} call(s), {stats.cache_hits} cached"
    )
    click.echo(f"wrote {result.out}")
