"""`nabench export`: a build's tasks for other evaluation harnesses."""

from __future__ import annotations

from pathlib import Path

import click

from nabench.stage.exports import HubData
from nabench.stage.exports.export import export_lm_eval

__all__ = ["export"]


@click.group()
def export() -> None:
    """Export a build's tasks for other harnesses (lm-evaluation-harness)."""


@export.command("lm-eval")
@click.argument("build")
@click.option("--revision", help="Hub revision to pin (default: the latest release's tag).")
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
    help="Folder for the task YAMLs (lm-eval --include_path).",
)  # fmt: skip
def lm_eval_cmd(build: str, revision: str | None, out: Path) -> None:
    """lm-eval tasks of BUILD (a built folder or a Hub dataset id): one per config, a group."""
    done = export_lm_eval(build, out, revision)
    spec, source = done.spec, done.source
    where = f"{source.repo_id}@{source.revision}" if isinstance(source, HubData) else source.root
    click.echo(
        f"{len(done.files)} file(s) -> {out}: group {spec.group} ({len(spec.configs)} task(s)), "
        f"{spec.group}_gen; data {where}"
    )
    click.echo(f"run: lm-eval run --include_path {out} --tasks {spec.group} --model ...")
