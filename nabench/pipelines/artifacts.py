"""The artifact-suite pipeline: source -> eligibility audit -> few-shot plan -> prompt configs
-> validate -> stage (the same Hub layout, card and manifest as the NA pipeline)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from nabench.audit.eligibility import Audit, audit_items, split_by_flags
from nabench.core.errors import NabenchError, ValidationFailed
from nabench.perturb.artifacts import PROMPT_TYPES, Items, plan_fewshot
from nabench.pipelines.skeleton import (
    BuildOptions,
    BuildResult,
    audited_selection,
    build_protocol,
    check_strict,
    item_card_parts,
    item_manifest_head,
    item_manifest_outcome,
    load_split,
    split_record,
)
from nabench.schemas.artifacts_recipe import ArtifactsRecipe
from nabench.schemas.manifest import Manifest
from nabench.schemas.protocol import artifacts_preset
from nabench.sources import LoadedSplit, Source, get_source
from nabench.stage.cards import render_card
from nabench.stage.croissant import CardFacts
from nabench.stage.hub_layout import StagedTable, source_section, stage
from nabench.validate.invariants import summarise_violations
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


def record_key(item_id: str) -> str:
    """The source record behind an item id (last path segment: the GPQA Record ID)."""
    return item_id.rsplit("/", 1)[-1]


def build_artifacts(recipe: ArtifactsRecipe, options: BuildOptions) -> BuildResult:
    """Build every prompt config of an `artifacts` recipe and stage it in `options.out`."""
    source = get_source(recipe.source.dataset)
    seed = recipe.seed if options.seed is None else options.seed
    splits = list(options.splits or recipe.source.splits)
    out = options.out or Path("build") / recipe.name
    fs = recipe.fewshot
    pool_config = fs.config or recipe.source.config
    if pool_config == recipe.source.config and fs.split in splits:
        raise NabenchError(f"few-shot split {fs.split!r} is also an evaluated split")
    location = options.source or recipe.source.hub_id
    protocol = build_protocol(options.protocol)
    text = artifacts_preset(protocol).text

    loaded = {
        split: load_split(source, recipe, location, split, recipe.source.config, seed)
        for split in splits
    }
    pool_loaded = load_split(source, recipe, location, fs.split, pool_config, seed)
    pool, pool_record = _fewshot_pool(recipe, source, pool_loaded, loaded.values())
    pool_items = Items.from_table(pool, text)

    staged: list[StagedTable] = []
    excluded_tables: list[pa.Table] = []
    sources_meta: dict[str, Any] = {}
    used_pool_rows: set[int] = set()
    groups: dict[str, int] = {}
    for split in splits:
        ls = loaded[split]
        items, audit, _ = audited_selection(
            ls.items, audit_for_artifacts, limit=options.limit, sample=options.sample, seed=seed
        )
        sources_meta[split] = split_record(ls, items)
        check_strict(audit.excluded, options.strict)
        excluded_tables.append(audit.excluded)
        test_items = Items.from_table(audit.eligible, text)
        plan = plan_fewshot(
            test_items, pool_items, protocol=fs.protocol, k=fs.k, seed=seed, dataset=source.name
        )
        groups[split] = len(plan.keys)
        for rows in plan.rows:
            used_pool_rows.update(rows)
        for name in recipe.prompt_types:
            table = PROMPT_TYPES[name].build(test_items, pool_items, plan, seed)
            staged.append(StagedTable(name, split, table))
        staged.append(StagedTable(EXCLUDED_CONFIG, split, audit.excluded))
    used = pool.take(pa.array(sorted(used_pool_rows), pa.int64()))
    staged.append(StagedTable(FEWSHOT_CONFIG, fs.split, used))

    violations = validate_artifacts(staged, text=text, k=fs.k, pool=pool).violations
    if violations:
        raise ValidationFailed(summarise_violations(violations))

    prompt_types = {
        name: {"stop": PROMPT_TYPES[name].stop, "description": PROMPT_TYPES[name].description}
        for name in recipe.prompt_types
    }
    fields = {
        **item_manifest_head("artifacts", recipe, seed, splits, options, protocol),
        "text": text,
        "source": source_section(source, recipe, location, sources_meta),
        "fewshot": {**pool_record, "pool_rows_used": used.num_rows, "groups": groups},
        "prompt_types": prompt_types,
        **item_manifest_outcome(staged, excluded_tables, "nabench.validate.artifacts"),
    }
    manifest = Manifest.model_validate(fields)
    stage(out, staged, readme_renderer(manifest, staged), manifest, CardFacts(uses=ARTIFACT_USES))
    return BuildResult(out, manifest.counts, fields["exclusions"], {}, [])


def _fewshot_pool(
    recipe: ArtifactsRecipe, source: Source, loaded: LoadedSplit, evaluated: Iterable[LoadedSplit]
) -> tuple[pa.Table, dict[str, Any]]:
    """The usable few-shot pool (`loaded`: the pool split as read) and build.json's `fewshot`
    record of it, less its use. With `exclude_eval_records`, a pool item whose source record
    is also evaluated is dropped, so no question is shown as its own example."""
    fs = recipe.fewshot
    audit = audit_for_artifacts(loaded.items, POOL_REASONS)
    pool = audit.eligible
    if fs.exclude_eval_records:
        seen = {record_key(i) for ls in evaluated for i in ls.items.column("id").to_pylist()}
        keep = [record_key(i) not in seen for i in pool.column("id").to_pylist()]
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


def readme_renderer(
    manifest: Manifest, staged: Sequence[StagedTable]
) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]], str]:
    """The README renderer of an artifact build, from its manifest and staged tables (also
    used by the question-inference pipeline when it adds configs)."""
    recipe = manifest.recipe
    source = get_source(recipe["source"]["dataset"])
    counts, record = manifest.counts, manifest.record()
    examples = _card_examples(staged)

    def render(configs: list[dict[str, Any]], infos: list[dict[str, Any]]) -> str:
        tags = ["nabench", "mcqa-artifacts", "choices-only", "memorization"]
        metadata, context = item_card_parts(
            manifest, source, configs, infos, tags=tags, summary="Artifact probes"
        )
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
                {"config": c, "split": s, "rows": n}
                for c, d in counts.items()
                for s, n in d.items()
            ],
            "prompt_types": prompt_types,
            "fewshot": record["fewshot"],
            "exclusions": record["exclusions"]["by_reason"],
            "excluded_total": record["exclusions"]["total"],
            "examples": examples,
            "question_inference": manifest.question_inference,
            "repo_id": recipe["publish"].get("repo_id") or f"ORG/{recipe['name']}",
            "example_config": "choices_only" if "choices_only" in counts else next(iter(counts)),
            "example_split": next(iter(manifest.splits or [])),
            "artifacts_citation": ARTIFACTS_CITATION,
        }
        return render_card(template="artifacts_card.md.jinja", metadata=metadata, context=context)

    return render


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
