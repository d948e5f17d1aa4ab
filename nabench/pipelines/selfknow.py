"""``nabench build`` for ``kind: selfknow``: generation → quarantine → classification → metrics.

Output (``options.out``, default ``build/<recipe name>``), staged atomically in the Hub layout:

* ``tasks/test-…parquet``: kept generated tasks (:data:`~.generate.TASKS_ARROW`);
* ``quarantine/test-…parquet``: planned slots without a kept task, with the reason;
* ``classifications/test-…parquet``: the model's verdict on each kept task
  (:data:`~.classify.CLASSIFICATIONS_ARROW`, scoreable by ``nabench selfknow metrics``);
* ``README.md`` (card from ``selfknow_card.md.jinja``) and ``build.json`` (manifest);
* ``report/``: ``report.md``, ``metrics.json`` and a bar chart per type (written after
  staging, so not hashed in ``build.json``); with several prompt styles, also
  ``report/<style>/`` for each style.

Beside the output: ``<out>.stats.json`` (the run statistics: ``calls``, ``cache_hits``, ...,
with per-stage detail) and, unless another path is given, the response cache
``<out>.cache.sqlite``. Every model call goes through :func:`nabench.llm.complete_json` and
that cache, so a rerun makes no call, and a killed run resumes with only the missing requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.core.errors import NabenchError, ValidationFailed
from nabench.core.version import __version__
from nabench.llm import Backend, ResponseCache, RunStats, write_stats
from nabench.llm.options import open_backend
from nabench.pipelines.skeleton import BuildOptions, BuildResult, PhaseClock, build_protocol
from nabench.schemas.manifest import Manifest
from nabench.schemas.protocol import Protocol
from nabench.selfknow.classify import (
    ClassificationResult,
    ClassificationSettings,
    classify_tasks,
)
from nabench.selfknow.generate import (
    GenerationResult,
    GenerationSettings,
    generate_tasks,
    generation_job,
    plan_slots,
)
from nabench.selfknow.metrics import SelfKnowledgeMetrics, selfknow_metrics
from nabench.selfknow.prompts import PromptSet, load_prompts
from nabench.selfknow.recipe import SelfKnowRecipe
from nabench.selfknow.report import SCORE_LABELS, fmt_score, write_report
from nabench.selfknow.taxonomy import Taxonomy, load_taxonomy
from nabench.stage.cards import render_card, size_category
from nabench.stage.croissant import CardFacts
from nabench.stage.hub_layout import StagedTable, StagingArea, manifest_header, row_counts
from nabench.validate.invariants import summarise_violations
from nabench.validate.kinds import validate_selfknow

SPLIT = "test"
# What a self-knowledge build is for (croissant.json's data use cases).
SELFKNOW_USES = (
    "Studying whether a model knows which tasks it can and cannot do (the self-knowledge "
    "study), from tasks the model itself wrote and its own verdicts.",
)
CONFIGS: tuple[str, ...] = ("tasks", "quarantine", "classifications")


def default_cache_path(out: Path) -> Path:
    """``<out>.cache.sqlite`` beside the output folder or file."""
    return out.parent / f"{out.name}.cache.sqlite"


def default_stats_path(out: Path) -> Path:
    """``<out>.stats.json`` beside the output folder or file."""
    return out.parent / f"{out.name}.stats.json"


def generation_settings(recipe: SelfKnowRecipe, n_per_class: int, seed: int) -> GenerationSettings:
    gen = recipe.generator
    return GenerationSettings(
        n_per_class=n_per_class,
        styles=tuple(gen.styles),
        seed=seed,
        temperature=gen.temperature,
        max_tokens=gen.max_tokens,
        max_task_chars=gen.max_task_chars,
        max_analysis_chars=gen.max_analysis_chars,
        max_attempts=gen.max_attempts,
        batch_size=gen.batch_size,
        chunk_size=gen.chunk_size,
        refill_rounds=gen.refill_rounds,
    )


def classification_settings(recipe: SelfKnowRecipe, seed: int) -> ClassificationSettings:
    cls = recipe.classifier
    return ClassificationSettings(
        style=cls.style,
        temperature=cls.temperature,
        seed=seed,
        max_tokens=cls.max_tokens,
        max_answer_chars=cls.max_answer_chars,
        max_analysis_chars=cls.max_analysis_chars,
        max_attempts=cls.max_attempts,
        chunk_size=cls.chunk_size,
    )


def combine_stats(generation: RunStats, classification: RunStats) -> RunStats:
    """One run's statistics: summed counts, with each stage's own in ``extra``."""
    total = RunStats(total=generation.total + classification.total)
    total.add(generation)
    total.add(classification)
    total.extra = {
        "generation": generation.to_dict(),
        "classification": classification.to_dict(),
    }
    return total


@dataclass
class SelfKnowRun:
    """Everything one pipeline run produced."""

    out: Path
    generation: GenerationResult
    classification: ClassificationResult
    metrics: dict[str, SelfKnowledgeMetrics]
    stats: RunStats
    cache_path: Path
    stats_path: Path
    report_dir: Path
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Study:
    """What one run studies: the recipe at its seed and per-class count (after `limit`), and
    the taxonomy and prompts it uses."""

    recipe: SelfKnowRecipe
    seed: int
    n_per_class: int
    limit: int | None
    taxonomy: Taxonomy
    prompts: PromptSet


def run_selfknow(
    recipe: SelfKnowRecipe,
    out: Path,
    *,
    seed: int | None = None,
    limit: int | None = None,
    cache_path: Path | None = None,
    progress: bool = False,
    taxonomy: Taxonomy | None = None,
    prompts: PromptSet | None = None,
    protocol: Protocol | None = None,
    confirmed: bool = True,
) -> SelfKnowRun:
    """Run the whole study for ``recipe`` into ``out`` (see the module docstring).

    Unless ``confirmed``, a long model job stops with its plan (`ConfirmationNeeded`): once
    before generating (the generation requests plus one classification per slot, the most
    the classification can cost) and, with the tasks known, before classifying.
    """
    taxonomy = taxonomy or load_taxonomy()
    prompts = prompts or load_prompts()
    seed = recipe.seed if seed is None else seed
    n_per_class = recipe.generator.n_per_class
    if limit is not None:
        n_per_class = min(n_per_class, limit)
    study = Study(recipe, seed, n_per_class, limit, taxonomy, prompts)
    out = Path(out)
    cache_path = cache_path or default_cache_path(out)
    clock = PhaseClock()

    with ResponseCache(cache_path) as cache:
        generation, classification = _ask_models(study, cache, progress, confirmed, clock)
    run = _stage(study, out, generation, classification, cache_path, protocol, clock)
    write_stats(run.stats, run.stats_path)
    return run


def _ask_models(
    study: Study, cache: ResponseCache, progress: bool, confirmed: bool, clock: PhaseClock
) -> tuple[GenerationResult, ClassificationResult]:
    """Generate, then classify (the generator's model, or the classifier's own); each model
    job starts only once its plan is confirmed (see `run_selfknow`)."""
    recipe, taxonomy, prompts = study.recipe, study.taxonomy, study.prompts
    classifier_spec = recipe.classifier_model()
    gen_backend = open_backend(recipe.generator)
    cls_backend: Backend | None = None
    try:
        gen_settings = generation_settings(recipe, study.n_per_class, study.seed)
        job = generation_job(gen_backend, cache, gen_settings, taxonomy=taxonomy, prompts=prompts)
        if job.to_compute:  # new tasks: none of their classifications can be cached
            slots = len(plan_slots(study.n_per_class, gen_settings.styles, study.seed, taxonomy))
            job = replace(job, task=f"{job.task} and classify them", requests=job.requests + slots)
        job.require_confirmation(confirmed)
        with clock("generate"):
            generation = generate_tasks(
                gen_backend,
                cache,
                gen_settings,
                taxonomy=taxonomy,
                prompts=prompts,
                progress=progress,
            )
        with clock("classify"):
            if classifier_spec.same_model_as(recipe.generator):
                cls_backend = gen_backend
            else:  # cross-model: free the generator before loading the classifier
                gen_backend.close()
                cls_backend = open_backend(classifier_spec)
            classification = classify_tasks(
                cls_backend,
                cache,
                generation.tasks,
                classification_settings(recipe, study.seed),
                taxonomy=taxonomy,
                prompts=prompts,
                progress=progress,
                confirmed=confirmed,
            )
    finally:
        gen_backend.close()
        if cls_backend is not None and cls_backend is not gen_backend:
            cls_backend.close()
    return generation, classification


def _stage(
    study: Study,
    out: Path,
    generation: GenerationResult,
    classification: ClassificationResult,
    cache_path: Path,
    protocol: Protocol | None,
    clock: PhaseClock,
) -> SelfKnowRun:
    """Score the verdicts and stage the tables, report, README and manifest into ``out``."""
    with StagingArea(out) as area:
        with clock("stage"):
            frame = classification.table.to_pandas()
            metrics = {
                mode: selfknow_metrics(frame, match=mode, taxonomy=study.taxonomy)  # type: ignore[arg-type]
                for mode in ("reason", "type")
            }
            run = SelfKnowRun(
                out=out,
                generation=generation,
                classification=classification,
                metrics=metrics,
                stats=combine_stats(generation.stats, classification.stats),
                cache_path=cache_path,
                stats_path=default_stats_path(out),
                report_dir=out / "report",
                warnings=_warnings(generation, classification),
                timings=clock.seconds,  # the clock's own dict: still counting until the commit
            )
            staged = [StagedTable(config, SPLIT, table) for config, table in tables_of(run).items()]
            # validated before anything is written, by the validator `nabench validate` runs
            violations = validate_selfknow(staged).violations
            if violations:
                raise ValidationFailed(summarise_violations(violations))
            for st in staged:
                area.add(st)  # written in the background while the report is drawn
            counts = row_counts(staged)
            manifest = _manifest(study, run, counts, protocol)
            readme = _readme_renderer(study, run, counts)

        with clock("report"):
            # report/ is part of the staged tree: hashed into build.json, published with it
            _write_reports(area.folder("report"), study.recipe, frame, metrics, study.taxonomy)

        with clock("stage"):
            area.commit(readme, manifest, CardFacts(uses=SELFKNOW_USES))
    return run


def _write_reports(
    folder: Path,
    recipe: SelfKnowRecipe,
    frame: Any,
    metrics: dict[str, SelfKnowledgeMetrics],
    taxonomy: Taxonomy,
) -> None:
    """The metrics report into ``folder``, and one per prompt style when there are two."""
    title = f"Self-knowledge metrics: {recipe.name} v{recipe.version}"
    write_report(folder, metrics["reason"], metrics["type"], title=title)
    styles = list(recipe.generator.styles)
    if len(styles) > 1:
        for style in styles:
            part = frame[frame["prompt_style"] == style]
            write_report(
                folder / style,
                selfknow_metrics(part, match="reason", taxonomy=taxonomy),
                selfknow_metrics(part, match="type", taxonomy=taxonomy),
                title=f"{title} ({style} prompts)",
            )


def apply_protocol(recipe: SelfKnowRecipe, protocol: Protocol) -> SelfKnowRecipe:
    """The recipe with a protocol's selfknow settings (temperatures, refill, tasks per
    class) applied."""
    preset = protocol.selfknow
    if preset is None:
        return recipe
    per_class = {} if preset.n_per_class is None else {"n_per_class": preset.n_per_class}
    generator = recipe.generator.model_copy(
        update={
            "temperature": preset.generation_temperature,
            "refill_rounds": preset.max_refill_rounds if preset.refill else 0,
            **per_class,
        }
    )
    classifier = recipe.classifier.model_copy(
        update={"temperature": preset.classification_temperature}
    )
    return recipe.model_copy(update={"generator": generator, "classifier": classifier})


def build_selfknow(recipe: SelfKnowRecipe, options: BuildOptions) -> BuildResult:
    """The ``selfknow`` pipeline of :data:`nabench.pipelines.na.PIPELINES`.

    ``options.limit`` caps ``n_per_class``, ``options.seed`` overrides the recipe seed,
    ``options.cache`` (``nabench build --cache``) chooses the response cache, by default
    ``<out>.cache.sqlite``.
    """
    if options.sample is not None:
        raise NabenchError("--sample applies to item datasets; a selfknow build takes --limit")
    out = options.out or Path("build") / recipe.name
    protocol = build_protocol(options.protocol)
    recipe = apply_protocol(recipe, protocol)
    run = run_selfknow(
        recipe,
        out,
        seed=options.seed,
        limit=options.limit,
        cache_path=getattr(options, "cache", None),
        progress=options.progress,
        protocol=protocol,
        confirmed=options.yes,
    )
    counts = {
        "tasks": {SPLIT: run.generation.tasks.num_rows},
        "quarantine": {SPLIT: run.generation.quarantine.num_rows},
        "classifications": {SPLIT: run.classification.table.num_rows},
    }
    by_reason = run.generation.quarantine_counts
    return BuildResult(
        out=run.out,
        counts=counts,
        exclusions={"total": sum(by_reason.values()), "by_reason": by_reason},
        letter_shares={},
        warnings=run.warnings,
        timings=run.timings,
    )


# -- helpers -------------------------------------------------------------------------------


def _rate(valid: int, total: int) -> float | None:
    return None if total == 0 else valid / total


def generation_summary(generation: GenerationResult) -> dict[str, Any]:
    extra = generation.stats.extra
    requests = generation.stats.total
    return {
        "slots": len(generation.plan),
        "requests": requests,
        "valid_json": extra.get("valid", 0),
        "invalid_json": extra.get("invalid", 0),
        "valid_json_rate": _rate(int(extra.get("valid", 0)), requests),
        "kept": generation.tasks.num_rows,
        "quarantined": generation.quarantine.num_rows,
        "quarantine_by_reason": generation.quarantine_counts,
        "refill_rounds": extra.get("refill_rounds", 0),
        "kept_by_class": {
            c: generation.tasks.column("category").to_pylist().count(c)
            for c in ("feasible", "infeasible")
        },
        "shortfall": dict(generation.shortfall),
    }


def _warnings(generation: GenerationResult, classification: ClassificationResult) -> list[str]:
    warnings: list[str] = []
    if generation.tasks.num_rows == 0:
        warnings.append(
            f"no generated task passed quarantine ({generation.quarantine.num_rows} quarantined)"
        )
    summary = classification.summary
    if summary.invalid:
        warnings.append(
            f"{summary.invalid} of {summary.total} classification(s) are not valid JSON "
            "(kept with valid=false, counted as invalid rows by the metrics)"
        )
    if summary.unknown_reasons:
        warnings.append(
            f"{sum(summary.unknown_reasons.values())} classification reason(s) are not in the "
            "taxonomy (kept verbatim)"
        )
    return warnings


def _scores(metrics: SelfKnowledgeMetrics) -> dict[str, Any]:
    return {"n": metrics.n, **metrics.scores.as_dict(), "counts": metrics.counts.as_dict()}


def _manifest(
    study: Study, run: SelfKnowRun, counts: dict[str, dict[str, int]], protocol: Protocol | None
) -> Manifest:
    generation, classification = run.generation, run.classification
    first = generation.tasks.column("generator_model").to_pylist()[:1]
    cls_models = sorted(set(classification.table.column("classifier_model").to_pylist()))
    manifest: dict[str, Any] = {
        **manifest_header("selfknow", study.recipe, study.seed),
        "n_per_class": study.n_per_class,
        "limit": study.limit,
        "generator_model": first[0] if first else None,
        "classifier_models": cls_models,
        "counts": counts,
        "generation": generation_summary(generation),
        "classification": classification.summary.as_dict(),
        "metrics": {mode: _scores(value) for mode, value in run.metrics.items()},
        "warnings": run.warnings,
        # side files: staging publishes them the one portable way (core.portable: relative
        # to the build inside it, else `local:<name>`), never by the machine's path
        "cache": str(Path(run.cache_path).resolve()),
        "stats": str(Path(run.stats_path).resolve()),
    }
    if protocol is not None:
        manifest["protocol"] = protocol.record()
    return Manifest.model_validate(manifest)


def _readme_renderer(study: Study, run: SelfKnowRun, counts: dict[str, dict[str, int]]) -> Any:
    recipe, taxonomy, metrics = study.recipe, study.taxonomy, run.metrics
    generation, classification = run.generation, run.classification
    total = max((sum(c.values()) for c in counts.values()), default=0)
    gen_summary = generation_summary(generation)
    cls_summary = classification.summary.as_dict()
    models = generation.tasks.column("generator_model").to_pylist()
    models += generation.quarantine.column("generator_model").to_pylist()
    generator_model = models[0] if models else ""
    classifier_models = sorted(set(classification.table.column("classifier_model").to_pylist()))

    def render(configs: list[dict[str, Any]], infos: list[dict[str, Any]]) -> str:
        pretty = f"Self-knowledge tasks (nabench {recipe.name})"
        metadata: dict[str, Any] = {
            "language": ["en"],
            "pretty_name": pretty,
            "task_categories": ["text-classification", "text-generation"],
            "size_categories": [size_category(total)],
            "tags": ["nabench", "self-knowledge", "line-of-duty", "synthetic", "llm-generated"],
            "configs": configs,
            "dataset_info": infos,
        }
        if recipe.publish.license:
            metadata["license"] = recipe.publish.license
        score_rows = [
            {
                "label": label,
                **{mode: fmt_score(getattr(m.scores, key)) for mode, m in metrics.items()},
            }
            for key, label in SCORE_LABELS
        ]
        context = {
            "pretty_name": pretty,
            "summary": recipe.description
            or "Tasks a model wrote as feasible or infeasible for itself, and its own verdicts.",
            "nabench_version": __version__,
            "recipe_name": recipe.name,
            "recipe_version": recipe.version,
            "seed": study.seed,
            "n_per_class": study.n_per_class,
            "styles": ", ".join(recipe.generator.styles),
            "generator_model": generator_model or "(none)",
            "generator_backend": recipe.generator.backend,
            "generator_temperature": recipe.generator.temperature,
            "classifier_models": ", ".join(classifier_models) or "(none)",
            "cross_model": not recipe.classifier.same_as_generator,
            "classifier_temperature": recipe.classifier.temperature,
            "classifier_style": recipe.classifier.style,
            "prompt_version": study.prompts.version,
            "taxonomy_version": taxonomy.version,
            "n_types": len(taxonomy.types),
            "n_reasons": len(taxonomy.reasons),
            "counts": [
                {"config": c, "split": s, "rows": n}
                for c, d in counts.items()
                for s, n in d.items()
            ],
            "generation": gen_summary,
            "generation_rate": fmt_score(gen_summary["valid_json_rate"]),
            "classification": cls_summary,
            "classification_rate": fmt_score(cls_summary["valid_rate"]),
            "quarantine": gen_summary["quarantine_by_reason"],
            "scores": score_rows,
            "metric_n": {mode: m.n for mode, m in metrics.items()},
            "repo_id": recipe.publish.repo_id or f"ORG/{recipe.name}",
        }
        return render_card(template="selfknow_card.md.jinja", metadata=metadata, context=context)

    return render


def tables_of(run: SelfKnowRun) -> dict[str, pa.Table]:
    """The three staged tables of a run, by config name."""
    return {
        "tasks": run.generation.tasks,
        "quarantine": run.generation.quarantine,
        "classifications": run.classification.table,
    }
