"""The artifact-suite pipeline: source -> eligibility audit -> few-shot plan -> prompt configs
-> validate -> stage (the same Hub layout, card and manifest as the NA pipeline)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from nabench.audit.eligibility import Audit, audit_items, split_by_flags
from nabench.core.errors import NabenchError
from nabench.perturb.artifacts import PROMPT_TYPES, Items, plan_fewshot
from nabench.pipelines.driver import Card, KindBuild, Step, Steps, drive
from nabench.pipelines.skeleton import (
    BuildOptions,
    BuildResult,
    Resolved,
    audited_selection,
    item_card_parts,
    item_manifest_head,
    item_manifest_outcome,
    load_split,
    require_items,
    split_record,
)
from nabench.schemas.artifacts_recipe import ArtifactsRecipe
from nabench.schemas.manifest import Manifest
from nabench.schemas.protocol import artifacts_preset
from nabench.sources import LoadedSplit, Source, get_source
from nabench.stage.hub_layout import StagedTable, source_section
from nabench.validate.invariants import ValidationReport
from nabench.validate.kinds import validate_artifacts

# Eligibility reasons that make an item unusable for the artifact prompts. Items that already
# hold "None/All of the above" are fine here (nothing is inserted), so those reasons of the
# shared audit are dropped.
ARTIFACT_REASONS = ("not_four_choices", "empty_choice", "duplicate_choices")
# Few-shot pool items only need a well-formed option block: duplicate options are kept (the
# standard MMLU 5-shot uses dev/00092, whose options 0 and 2 are equal).
POOL_REASONS = ("not_four_choices", "empty_choice")
FEWSHOT_CONFIG = "fewshot"
EXCLUDED_CONFIG = "excluded"
NON_PROMPT_CONFIGS = (FEWSHOT_CONFIG, EXCLUDED_CONFIG)
# What an artifact build is for (croissant.json's data use cases).
ARTIFACT_USES = (
    "Measuring answer-only and other prompt-artifact shortcuts of multiple-choice models.",
    "Not for training: the items are test items of a public benchmark.",
)
ARTIFACTS_CITATION = (
    "@inproceedings{balepur2024artifacts,\n"
    "  title={Artifacts or Abduction: How Do {LLM}s Answer Multiple-Choice Questions "
    "Without the Question?},\n"
    "  author={Nishant Balepur and Abhilasha Ravichander and Rachel Rudinger},\n"
    "  booktitle={Proceedings of the 62nd Annual Meeting of the Association for "
    "Computational Linguistics (Volume 1: Long Papers)},\n  year={2024}\n}"
)


def artifact_reasons(
    prompt_types: Iterable[str], reasons: Sequence[str] = ARTIFACT_REASONS
) -> tuple[str, ...]:
    """`reasons`, and `missing_question` where one of the prompts shows the question (an item
    or example without one cannot be built into it; choices-only prompts need none)."""
    shown = any(PROMPT_TYPES[name].shows_question for name in prompt_types)
    return ("missing_question", *reasons) if shown else tuple(reasons)


def audit_for_artifacts(items: pa.Table, reasons: Sequence[str] = ARTIFACT_REASONS) -> Audit:
    """The shared eligibility audit (no inserted texts), keeping only `reasons`."""
    audit = audit_items(items)
    ids = np.array(items.column("id").to_pylist(), dtype=object)
    excluded_ids = audit.excluded.column("id").to_pylist()
    found = audit.excluded.column("reasons").to_pylist()
    flags = {
        reason: np.isin(ids, [i for i, rs in zip(excluded_ids, found, strict=True) if reason in rs])
        for reason in reasons
    }
    return split_by_flags(items, flags)


def build_artifacts(recipe: ArtifactsRecipe, options: BuildOptions) -> BuildResult:
    """Build every prompt config of an `artifacts` recipe and stage it in `options.out`."""
    return drive(ArtifactsBuild, recipe, options)


class ArtifactsBuild(KindBuild):
    """An artifact build: the splits and the few-shot pool loaded, then per split the audit
    and every prompt config, then the few-shot rows the prompts used."""

    uses = ARTIFACT_USES

    def __init__(self, job: Resolved) -> None:
        super().__init__(job)
        recipe = self.recipe = job.recipe
        self.source = get_source(recipe.source.dataset)
        fs = recipe.fewshot
        self.pool_config = fs.config or recipe.source.config
        if self.pool_config == recipe.source.config and fs.split in job.splits:
            raise NabenchError(f"few-shot split {fs.split!r} is also an evaluated split")
        self.text = artifacts_preset(job.protocol).text
        self.reasons = artifact_reasons(recipe.prompt_types)
        self.steps_total = 2 * len(job.splits) + 2
        self.sources_meta: dict[str, Any] = {}
        self.excluded: list[pa.Table] = []
        self.groups: dict[str, int] = {}

    def steps(self) -> Steps:
        job, recipe, source, fs = self.job, self.recipe, self.source, self.recipe.fewshot
        opts, seed = job.options, job.seed
        load = functools.partial(load_split, source, recipe, job.location, seed=seed)
        loaded = {split: load(split, recipe.source.config) for split in job.splits}
        pool_loaded = load(fs.split, self.pool_config)
        self.pool, self.pool_record = _fewshot_pool(recipe, source, pool_loaded, loaded.values())
        pool_items = Items.from_table(self.pool, self.text)
        yield Step("load", "load")
        used_pool_rows: set[int] = set()
        for split, ls in loaded.items():
            items, audit, _ = audited_selection(
                ls.items,
                functools.partial(audit_for_artifacts, reasons=self.reasons),
                split=split,
                limit=opts.limit,
                sample=opts.sample,
                rebuild=opts.rebuild,
                seed=seed,
            )
            require_items(split, audit.eligible.num_rows, audit.excluded)
            self.sources_meta[split] = split_record(ls, items)
            self.excluded.append(audit.excluded)
            yield Step("audit", f"audit {split}", quarantined=audit.excluded)
            test_items = Items.from_table(audit.eligible, self.text)
            plan = plan_fewshot(
                test_items, pool_items, protocol=fs.protocol, k=fs.k, seed=seed, dataset=source.name
            )
            self.groups[split] = len(plan.keys)
            for rows in plan.rows:
                used_pool_rows.update(rows)
            tables = [
                StagedTable(
                    name, split, PROMPT_TYPES[name].build(test_items, pool_items, plan, seed)
                )
                for name in recipe.prompt_types
            ]
            yield Step(
                "perturb", split, [*tables, StagedTable(EXCLUDED_CONFIG, split, audit.excluded)]
            )
        self.used = self.pool.take(pa.array(sorted(used_pool_rows), pa.int64()))
        yield Step("perturb", FEWSHOT_CONFIG, [StagedTable(FEWSHOT_CONFIG, fs.split, self.used)])

    def validate(self, staged: Sequence[StagedTable]) -> ValidationReport:
        return validate_artifacts(staged, text=self.text, k=self.recipe.fewshot.k, pool=self.pool)

    def manifest(self, staged: Sequence[StagedTable], report: ValidationReport) -> dict[str, Any]:
        job, recipe = self.job, self.recipe
        prompt_types = {
            name: {"stop": PROMPT_TYPES[name].stop, "description": PROMPT_TYPES[name].description}
            for name in recipe.prompt_types
        }
        used = {"pool_rows_used": self.used.num_rows, "groups": self.groups}
        return {
            **item_manifest_head("artifacts", job),
            "text": self.text,
            "source": source_section(self.source, recipe, job.location, self.sources_meta),
            "fewshot": {**self.pool_record, **used},
            "prompt_types": prompt_types,
            **item_manifest_outcome(staged, self.excluded, "nabench.validate.artifacts"),
        }

    def card(self, manifest: Manifest, staged: list[StagedTable], report: ValidationReport) -> Card:
        return artifacts_card(manifest, staged)


def _fewshot_pool(
    recipe: ArtifactsRecipe, source: Source, loaded: LoadedSplit, evaluated: Iterable[LoadedSplit]
) -> tuple[pa.Table, dict[str, Any]]:
    """The usable few-shot pool (`loaded`: the pool split as read) and build.json's `fewshot`
    record of it, less its use. With `exclude_eval_records`, a pool item whose source record
    is also evaluated is dropped, so no question is shown as its own example."""
    fs = recipe.fewshot
    audit = audit_for_artifacts(loaded.items, artifact_reasons(recipe.prompt_types, POOL_REASONS))
    pool = audit.eligible
    if fs.exclude_eval_records:
        # by the source's record (GPQA's configs nest); an MMLU id's last segment is a row
        # number, so `mmlu/all/dev/00003` is not the record of `mmlu/all/test/00003`
        key = source.record_id
        seen = {key(i) for ls in evaluated for i in ls.items.column("id").to_pylist()}
        keep = [key(i) not in seen for i in pool.column("id").to_pylist()]
        pool = pool.filter(pa.array(keep, pa.bool_()))
    record = {
        "protocol": fs.protocol,
        "k": fs.k,
        "split": fs.split,
        "config": (fs.config or recipe.source.config) or source.default_config,
        "note": fs.note,
        "seeding": f'item_rng(seed, "{source.name}/<subject>", "fewshot" | "prior_fewshot")',
        "pool_origin": loaded.origin,
        "pool_fingerprint": loaded.fingerprint,
        "pool_rows_read": loaded.items.num_rows,
        "pool_rows_ineligible": audit.excluded.num_rows,
        "pool_rows_removed_as_evaluated": audit.eligible.num_rows - pool.num_rows,
        "pool_rows_usable": pool.num_rows,
    }
    return pool, record


def last_example(prompt: str) -> str:
    """The last example of a prompt (for the card; display only)."""
    return prompt.rsplit("\n\n", 1)[-1]


def artifacts_card(manifest: Manifest, staged: Sequence[StagedTable]) -> Card:
    """The card of an artifact build, from its manifest and staged tables (also used by the
    question-inference pipeline when it adds configs)."""
    recipe = manifest.recipe
    source = get_source(recipe["source"]["dataset"])
    counts, record = manifest.counts, manifest.record()
    tags = ["nabench", "mcqa-artifacts", "choices-only", "memorization"]
    metadata, context = item_card_parts(manifest, source, tags=tags, summary="Artifact probes")
    prompt_types = [
        {
            "config": name,
            "stop": json.dumps(meta["stop"]),
            "description": meta["description"],
            "rows": ", ".join(f"{s}: {n}" for s, n in counts.get(name, {}).items()),
        }
        for name, meta in (manifest.prompt_types or {}).items()
    ]
    context |= {
        "source_fingerprint": ", ".join(
            f"{s}: {m['fingerprint'][:16]}" for s, m in record["source"]["splits"].items()
        ),
        "counts": [
            {"config": c, "split": s, "rows": n} for c, d in counts.items() for s, n in d.items()
        ],
        "prompt_types": prompt_types,
        "fewshot": record["fewshot"],
        "exclusions": record["exclusions"]["by_reason"],
        "excluded_total": record["exclusions"]["total"],
        "examples": _card_examples(staged),
        "question_inference": manifest.question_inference,
        "example_config": "choices_only" if "choices_only" in counts else next(iter(counts)),
        "example_split": next(iter(manifest.splits or [])),
        "artifacts_citation": ARTIFACTS_CITATION,
    }
    return Card("artifacts_card.md.jinja", metadata, context)


def _card_examples(staged: Sequence[StagedTable]) -> list[dict[str, Any]]:
    """The card's example of each prompt config: the last example of its first row."""
    first: dict[str, dict[str, Any]] = {}
    for st in staged:
        if st.config not in NON_PROMPT_CONFIGS and st.config not in first and st.table.num_rows:
            first[st.config] = st.table.slice(0, 1).to_pylist()[0]
    return [
        {
            "config": config,
            "id": row["id"],
            "target": json.dumps(row["target"]),
            "stop": json.dumps(row["stop"]),
            "text": last_example(row["prompt"]),
        }
        for config, row in first.items()
    ]
