"""`nabench artifacts ...`: commands of the MCQA artifact suite.

Register with ``main.add_command(artifacts)`` (``from nabench.perturb.artifacts.cli import
artifacts``) in `nabench/cli.py`; also runnable as ``python -m nabench.perturb.artifacts.cli``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

BACKEND_NAMES = ("local", "openai", "vllm")


def default_cache_path() -> Path:
    """`$NABENCH_CACHE_DIR/responses.sqlite` (default `~/.cache/nabench`)."""
    root = os.environ.get("NABENCH_CACHE_DIR") or Path.home() / ".cache" / "nabench"
    return Path(root) / "responses.sqlite"


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in {"true", "false"}:
        return text.lower() == "true"
    return text


def backend_options(
    backend: str, model: str | None, base_url: str | None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`get_backend` keyword arguments from the command-line options."""
    options: dict[str, Any] = {}
    if model:
        options["model_path" if backend == "local" else "model"] = model
    if base_url:
        if backend != "openai":
            raise click.UsageError("--base-url applies to the openai backend only")
        options["base_url"] = base_url
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--option expects KEY=VALUE, got {item!r}")
        options[key.replace("-", "_")] = _value(value)
    return options


@click.group(name="artifacts")
def artifacts() -> None:
    """MCQA artifact suite (choices-only, memorization, individual prior, question inference)."""


@artifacts.command("infer-questions")
@click.argument("built_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--backend", type=click.Choice(BACKEND_NAMES), required=True)
@click.option(
    "--model", help="Model: a GGUF file (local), a served name (openai), a path/id (vllm)."
)
@click.option("--base-url", help="OpenAI-compatible server URL (openai backend).")
@click.option(
    "--limit", type=click.IntRange(min=2), help="Only the first N qi_step1 rows per split."
)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Output folder [BUILT_DIR]."
)
@click.option("--cache", type=click.Path(dir_okay=False, path_type=Path), help="Response cache.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=96, show_default=True)
@click.option("--option", "extra", multiple=True, help="Backend option KEY=VALUE (repeatable).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def infer_questions_cmd(
    built_dir: Path,
    backend: str,
    model: str | None,
    base_url: str | None,
    limit: int | None,
    out: Path | None,
    cache: Path | None,
    max_tokens: int,
    extra: tuple[str, ...],
    quiet: bool,
) -> None:
    """Run question-inference step 1 on BUILT_DIR, then add `qi_step2`, `qi_random_question`
    and `qi_step1_outputs` to the build (re-staged atomically)."""
    from nabench.llm import ResponseCache, get_backend
    from nabench.perturb.artifacts.pipeline import infer_questions

    options = backend_options(backend, model, base_url, extra)
    with (
        get_backend(backend, **options) as llm,
        ResponseCache(cache or default_cache_path()) as responses,
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


if __name__ == "__main__":  # python -m nabench.perturb.artifacts.cli ...
    artifacts()
