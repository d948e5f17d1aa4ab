"""``nabench build`` for ``kind: selfknow``: generation → quarantine → classification → metrics.

Output (``options.out``, default ``build/<recipe name>``), staged atomically in the Hub layout:

* ``tasks/test-…parquet``: kept generated tasks (:data:`~.generate.TASKS_ARROW`);
* ``quarantine/test-…parquet``: planned slots without a kept task, with the reason;
* ``classifications/test-…parquet``: the model's verdict on each kept task
  (:data:`~.classify.CLASSIFICATIONS_ARROW`, scoreable by ``nabench selfknow metrics``);
* ``README.md`` (card from ``selfknow_card.md.jinja``) and ``build.json`` (manifest);
* ``report/``: ``report.md``, ``metrics.json`` and a bar chart per type (part of the tree,
  hashed in ``build.json``); with several prompt styles, also ``report/<style>/`` for each.

Beside the output: ``<out>.stats.json`` (the run statistics: ``calls``, ``cache_hits``, ...,
with per-stage detail) and, unless another path is given, the response cache
``<out>.cache.sqlite``. Every model call goes through :func:`nabench.llm.complete_json` and
that cache, so a rerun makes no call, and a killed run resumes with only the missing requests.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.llm import Backend, ResponseCache, RunStats, write_stats
from nabench.llm.options import open_backend
from nabench.pipelines.driver import (
    Card,
    KindBuild,
    Step,
    Steps,
    default_stats_path,
    drive,
)
from nabench.pipelines.skeleton import BuildOptions, BuildResult, Resolved
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
from nabench.selfknow.metrics import SelfKnowledgeMetrics, require_scored, selfknow_metrics
from nabench.selfknow.prompts import load_prompts
from nabench.selfknow.recipe import SelfKnowRecipe
from nabench.selfknow.report import SCORE_LABELS, fmt_score, write_report
from nabench.selfknow.taxonomy import Taxonomy, load_taxonomy
from nabench.stage.cards import size_category
from nabench.stage.hub_layout import StagedTable, manifest_header, row_counts
from nabench.validate.invariants import ValidationReport
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


class SelfKnowBuild(KindBuild):
    """A selfknow build: generate, classify (each model job starts only once its plan is
    confirmed: once before generating, for the generation requests plus one classification
    per slot, the most the classification can cost, and with the tasks known before
    classifying), score, report."""

    steps_total = 4
    uses = SELFKNOW_USES
    refuses_sample = "--sample applies to item datasets; a selfknow build takes --limit"

    def __init__(self, job: Resolved) -> None:
        super().__init__(job)
        self.protocol = job.protocol
        recipe = self.recipe = apply_protocol(job.recipe, self.protocol)
        self.taxonomy, self.prompts = load_taxonomy(), load_prompts()
        self.seed, self.limit = job.seed, job.options.limit
        per_class = recipe.generator.n_per_class
        self.n_per_class = per_class if self.limit is None else min(per_class, self.limit)
        self.cache_path = job.options.cache or default_cache_path(job.out)
        self.stats_path = default_stats_path(job.out)

    def steps(self) -> Steps:
        recipe, taxonomy, prompts = self.recipe, self.taxonomy, self.prompts
        opts = self.job.options
        ask: dict[str, Any] = {"taxonomy": taxonomy, "prompts": prompts, "progress": opts.progress}
        settings = generation_settings(recipe, self.n_per_class, self.seed)
        with ResponseCache(self.cache_path) as cache:
            gen_backend = open_backend(recipe.generator)
            cls_backend: Backend | None = None
            try:
                job = generation_job(
                    gen_backend, cache, settings, taxonomy=taxonomy, prompts=prompts
                )
                if job.to_compute:  # new tasks: none of their classifications can be cached
                    slots = len(plan_slots(self.n_per_class, settings.styles, self.seed, taxonomy))
                    job = replace(
                        job, task=f"{job.task} and classify them", requests=job.requests + slots
                    )
                job.require_confirmation(opts.yes)
                self.generation = generate_tasks(gen_backend, cache, settings, **ask)
                yield Step("generate")
                spec = recipe.classifier_model()
                if spec.same_model_as(recipe.generator):
                    cls_backend = gen_backend
                else:  # cross-model: free the generator before loading the classifier
                    gen_backend.close()
                    cls_backend = open_backend(spec)
                self.classification = classify_tasks(
                    cls_backend,
                    cache,
                    self.generation.tasks,
                    classification_settings(recipe, self.seed),
                    confirmed=opts.yes,
                    **ask,
                )
                yield Step("classify")
            finally:
                gen_backend.close()
                if cls_backend is not None and cls_backend is not gen_backend:
                    cls_backend.close()
        frame = self.classification.table.to_pandas()
        self.metrics = {
            mode: selfknow_metrics(frame, match=mode, taxonomy=taxonomy)  # type: ignore[arg-type]
            for mode in ("reason", "type")
        }
        require_scored(self.metrics["reason"], f"{self.job.out} classifications")
        yield Step("score", tables=[StagedTable(c, SPLIT, t) for c, t in tables_of(self).items()])
        # report/ is part of the staged tree: hashed into build.json, published with it
        report = functools.partial(
            _write_reports, recipe=recipe, frame=frame, metrics=self.metrics, taxonomy=taxonomy
        )
        yield Step("report", folder=("report", report))

    def validate(self, staged: Sequence[StagedTable]) -> ValidationReport:
        return validate_selfknow(staged)

    def manifest(self, staged: Sequence[StagedTable], report: ValidationReport) -> dict[str, Any]:
        generation, classification = self.generation, self.classification
        first = generation.tasks.column("generator_model").to_pylist()[:1]
        cls_models = sorted(set(classification.table.column("classifier_model").to_pylist()))
        return {
            **manifest_header("selfknow", self.recipe, self.seed),
            "n_per_class": self.n_per_class,
            "limit": self.limit,
            "generator_model": first[0] if first else None,
            "classifier_models": cls_models,
            "counts": row_counts(staged),
            "generation": generation_summary(generation),
            "classification": classification.summary.as_dict(),
            "metrics": {mode: _scores(value) for mode, value in self.metrics.items()},
            "warnings": _warnings(classification),
            # side files: staging publishes them the one portable way (core.portable: relative
            # to the build inside it, else `local:<name>`), never by the machine's path
            "cache": str(Path(self.cache_path).resolve()),
            "stats": str(Path(self.stats_path).resolve()),
            "protocol": self.protocol.record(),
        }

    def card(self, manifest: Manifest, staged: list[StagedTable], report: ValidationReport) -> Card:
        return _card(self, manifest.counts)

    def exclusions(self, fields: dict[str, Any]) -> dict[str, Any]:
        by_reason = self.generation.quarantine_counts
        return {"total": sum(by_reason.values()), "by_reason": by_reason}

    def after_commit(self, out: Path) -> None:
        stats = combine_stats(self.generation.stats, self.classification.stats)
        write_stats(stats, self.stats_path)


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
    """The ``selfknow`` pipeline: ``options.limit`` caps ``n_per_class``, ``options.seed``
    overrides the recipe seed, ``options.cache`` (``nabench build --cache``) chooses the
    response cache, by default ``<out>.cache.sqlite``."""
    return drive(SelfKnowBuild, recipe, options)


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


def _warnings(classification: ClassificationResult) -> list[str]:
    warnings: list[str] = []  # no task kept, or none scorable, stops the build (require_scored)
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


def _card(study: SelfKnowBuild, counts: dict[str, dict[str, int]]) -> Card:
    recipe, taxonomy, metrics = study.recipe, study.taxonomy, study.metrics
    generation, classification = study.generation, study.classification
    total = max((sum(c.values()) for c in counts.values()), default=0)
    gen_summary = generation_summary(generation)
    cls_summary = classification.summary.as_dict()
    models = generation.tasks.column("generator_model").to_pylist()
    models += generation.quarantine.column("generator_model").to_pylist()
    generator_model = models[0] if models else ""
    classifier_models = sorted(set(classification.table.column("classifier_model").to_pylist()))
    pretty = f"Self-knowledge tasks (nabench {recipe.name})"
    metadata: dict[str, Any] = {
        "language": ["en"],
        "pretty_name": pretty,
        "task_categories": ["text-classification", "text-generation"],
        "size_categories": [size_category(total)],
        "tags": ["nabench", "self-knowledge", "line-of-duty", "synthetic", "llm-generated"],
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
            {"config": c, "split": s, "rows": n} for c, d in counts.items() for s, n in d.items()
        ],
        "generation": gen_summary,
        "generation_rate": fmt_score(gen_summary["valid_json_rate"]),
        "classification": cls_summary,
        "classification_rate": fmt_score(cls_summary["valid_rate"]),
        "quarantine": gen_summary["quarantine_by_reason"],
        "scores": score_rows,
        "metric_n": {mode: m.n for mode, m in metrics.items()},
    }
    return Card("selfknow_card.md.jinja", metadata, context)


def tables_of(run: SelfKnowBuild) -> dict[str, pa.Table]:
    """The three staged tables of a run, by config name."""
    return {
        "tasks": run.generation.tasks,
        "quarantine": run.generation.quarantine,
        "classifications": run.classification.table,
    }
