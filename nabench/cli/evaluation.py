"""`nabench eval` and `nabench report` (click commands; registered by nabench/cli.py)."""

from __future__ import annotations

from pathlib import Path

import click

from nabench.audit.redux import read_annotations
from nabench.cli.model_flags import (
    BACKENDS,
    FiniteRange,
    ModelFlags,
    model_options,
    protocol_option,
    run_options,
)
from nabench.core.errors import NabenchError
from nabench.evaluation.prompts import DEFAULT_LOGPROBS_K, DEFAULT_MAX_TOKENS, PROMPT_FORMATS
from nabench.evaluation.report import write_report
from nabench.evaluation.runner import EvalOptions, run_eval
from nabench.label.files import read_labels
from nabench.schemas.protocol import get_protocol

__all__ = ["eval_cmd", "report_cmd"]


@click.command("eval")
@click.argument("dataset")
@click.option("--config", "configs", multiple=True, help="Config(s) to evaluate [all evaluable].")
@click.option("--split", help="Split [test, or the only one].")
@click.option("--revision", help="Hub revision (tag, branch or commit) of DATASET.")
@model_options(
    backends=(*BACKENDS, "reference"),
    model_help="GGUF path (local), model name (openai), HF dir (vllm), or a strategy "
    "(reference: always-a, majority, longest, oracle, always-na, never-na, always-aota).",
)
@click.option(
    "--mode",
    type=click.Choice(["generate", "loglik"]),
    default=None,
    help="Chain-of-thought generation, or option-letter log-probabilities "
    "[generate; loglik with --prompt-format lm-eval].",
)
@click.option(
    "--prompt-format",
    type=click.Choice(PROMPT_FORMATS),
    default="nabench",
    show_default=True,
    help="nabench's chat prompts, or lm-eval's MMLU completion layout scored by the next "
    "token's option-letter log-probabilities (one forward pass per item).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate only the first N items.")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Evaluate a seeded sample of N items, stratified by subject as `build --sample` "
    "draws (the same items in every config).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Output root: <out>/<run>/<config>.parquet + .summary.json.",
)
@click.option(
    "--run-name",
    help="Folder name of this run under --out [the model slug]. A folder holding a run "
    "with other settings is refused; without --run-name such a run goes to a new name.",
)
@click.option(
    "--invalid-credit",
    type=FiniteRange(0.0, 1.0),
    default=0.25,
    show_default=True,
    help="Score of an unparseable answer (0 = strict).",
)
@click.option(
    "--logprobs",
    "logprobs_k",
    type=click.IntRange(min=1),
    default=DEFAULT_LOGPROBS_K,
    show_default=True,
    help="Top-k log-probs requested (loglik mode).",
)
@protocol_option(
    "eval",
    "A paper's protocol preset: its prompt, decoding, answer rule, invalid-answer score and "
    "confidence replace the defaults; recorded in run.json and every summary. Not combinable "
    "with --max-tokens, --invalid-credit, --mode or --prompt-format.",
)
@run_options(max_tokens=DEFAULT_MAX_TOKENS, chunk_size=32, max_attempts=False)
def eval_cmd(
    dataset: str,
    configs: tuple[str, ...],
    split: str | None,
    revision: str | None,
    model_flags: ModelFlags,
    mode: str | None,
    prompt_format: str,
    limit: int | None,
    sample: int | None,
    out: Path,
    run_name: str | None,
    invalid_credit: float,
    max_tokens: int,
    logprobs_k: int,
    chunk_size: int,
    quiet: bool,
    protocol: str | None,
) -> None:
    """Evaluate DATASET (built folder or Hub id) with a model or a reference strategy."""
    if protocol is not None:
        _refuse_overrides(protocol, ("max_tokens", "invalid_credit", "mode", "prompt_format"))

    results = run_eval(
        EvalOptions(
            dataset=dataset,
            spec=model_flags.spec,
            configs=configs,
            mode=(mode or ("loglik" if prompt_format == "lm-eval" else "generate")),  # type: ignore[arg-type]
            prompt_format=prompt_format,  # type: ignore[arg-type]
            split=split,
            revision=revision,
            limit=limit,
            sample=sample,
            out=out,
            run_name=run_name,
            invalid_credit=invalid_credit,
            cache=model_flags.cache,
            max_tokens=max_tokens,
            logprobs_k=logprobs_k,
            chunk_size=chunk_size,
            progress=not quiet,
            protocol=protocol,
        )
    )
    for r in results:
        s = r.summary
        click.echo(
            f"{s['run']:<28} {s['config']:<40} n={s['n']:<6} acc={s['accuracy']:.3f} "
            f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}] invalid={s['invalid_rate']:.3f} "
            f"score={s['score']:.3f} majority={s['majority_baseline']:.3f} calls={s['calls']} "
            f"cache_hits={s['cache_hits']} retries={s['retries']}"
        )
    if results:
        click.echo(f"wrote {results[0].parquet.parent}")


def _refuse_overrides(protocol: str, names: tuple[str, ...]) -> None:
    """A preset fixes these settings: giving one on the command line as well is an error,
    not a silent choice between the two."""
    ctx = click.get_current_context()
    given = [
        f"--{n.replace('_', '-')}"
        for n in names
        if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE
    ]
    if given:
        raise click.UsageError(f"--protocol {protocol} sets {', '.join(given)} itself")


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=Path("report"), show_default=True)
@click.option(
    "--panel-min-coverage",
    type=FiniteRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Runs in a config's panel must cover this share of the largest run's items.",
)
@click.option("--no-plots", is_flag=True, help="Tables and Markdown only.")
@protocol_option(
    "report",
    "A paper's preset (na-paper): adds that paper's tables (its `report` section), "
    "recorded in report.json.",
)
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(path_type=Path),
    help="NA-applicability labels (a build's labels/*.parquet, or parquet/CSV/JSONL with "
    "id, na_applicable) for na-paper's full vs NA-filtered correlation.",
)
@click.option(
    "--redux",
    "redux_path",
    type=click.Path(exists=True, path_type=Path),
    help="A build made with audit.redux (or its redux/*.parquet): adds headline_redux, every "
    "headline drop split into MMLU-Redux `ok` vs `flagged` items.",
)
def report_cmd(
    results: tuple[Path, ...],
    out: Path,
    panel_min_coverage: float,
    no_plots: bool,
    protocol: str | None,
    labels_path: Path | None,
    redux_path: Path | None,
) -> None:
    """Report over eval RESULTS folders: accuracy tables, panel reliability, plots."""

    preset = None if protocol is None else get_protocol(protocol)  # checked by ProtocolChoice
    wants_labels = (
        preset is not None
        and preset.report is not None
        and ("full_vs_na_filtered" in preset.report.tables)
    )
    if labels_path is not None and not wants_labels:
        raise NabenchError(
            "--labels is read only by a protocol with the full vs NA-filtered table "
            "(--protocol na-paper)"
        )
    labels = None if labels_path is None else read_labels(labels_path)
    report = write_report(
        results,
        out,
        min_coverage=panel_min_coverage,
        plots=not no_plots,
        protocol=preset,
        labels=labels,
        redux=None if redux_path is None else read_annotations(redux_path),
    )
    for note in report.notes:
        click.echo(f"note: {note}")
    click.echo(
        f"{len(report.results.runs)} run(s), {len(report.results.configs)} config(s), "
        f"{len(report.panels)} panel(s), {len(report.plots)} plot(s) -> {out / 'report.md'}, "
        f"{out / 'report.html'}"
    )
