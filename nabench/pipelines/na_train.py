"""`nabench build` for `kind: na-train`: the NA study's SFT / DPO data (Tam et al., §5.5).

source → eligibility + contamination audit → NA-applicability labels → variants (the NA
builders) → `sampler.n` chain-of-thought samples per variant (the evaluation protocol's
prompt, through the cached batch runner) → parse → keep rule, SFT pick, DPO pairs
(`nabench.perturb.training`) → invariants (`nabench.validate.na_train`) → staged Hub layout.

Every sample is its own cache entry: sample j of a variant of an item is the request with
seed `base + j`, `base` drawn per (recipe seed, variant, item id). A killed run resumes with
the missing samples only; a rerun makes no call. The backends send each seeded sample alone
and cold, so its text does not depend on the batch (see `nabench.llm`).

All source splits go into one `train` split per config; ids keep the source split.
Beside the output: `<out>.stats.json`, the sampling run's calls and cache hits.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from nabench.audit.contamination import EvalIndex, contamination_counts, contamination_flags
from nabench.audit.eligibility import audit_items, exclusion_counts, split_by_flags
from nabench.core.errors import NabenchError
from nabench.core.rng import item_hashes
from nabench.evaluation import parse_answer
from nabench.evaluation.prompts import cot_prompt
from nabench.llm import (
    Backend,
    ChatRequest,
    Completion,
    JobPlan,
    ResponseCache,
    RunStats,
    count_hits,
    estimate_hook,
    run_cached,
    write_stats,
)
from nabench.llm.options import default_cache_path, open_backend
from nabench.perturb import ItemColumns
from nabench.perturb.recipe import NATrainRecipe
from nabench.perturb.training import ALL_CORRECT, ALL_INCORRECT, Selection, select
from nabench.pipelines.driver import (
    Card,
    KindBuild,
    Step,
    Steps,
    default_stats_path,
    drive,
)
from nabench.pipelines.labels import build_label_source, label_split
from nabench.pipelines.na import inserted_texts, make_builders
from nabench.pipelines.skeleton import (
    BuildOptions,
    BuildResult,
    Resolved,
    load_split,
    require_items,
    split_record,
)
from nabench.schemas.manifest import Manifest
from nabench.schemas.na_train import (
    DISCARDED_ARROW,
    DPO_ARROW,
    SAMPLES_ARROW,
    SFT_ARROW,
)
from nabench.sources import Source, get_source
from nabench.stage.cards import size_category
from nabench.stage.hub_layout import (
    StagedTable,
    manifest_header,
    row_counts,
    source_section,
)
from nabench.validate.invariants import ValidationReport
from nabench.validate.kinds import validate_na_train

SPLIT = "train"
NAMESPACE = "na-train"
_SEED_SPAN = 2**31 - 1024  # sample seeds base + j stay inside a signed 32-bit int
LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Prepared:
    """The variant tables to sample, the quarantine, and where each split came from."""

    variants: list[pa.Table]
    excluded: pa.Table
    sources: dict[str, Any]
    contamination: dict[str, int]


def sample_seeds(seed: int, variant: str, ids: Sequence[str]) -> np.ndarray:
    """Per item, the seed of sample 0 of `variant`; sample j has seed + j."""
    return (item_hashes(seed, ids, f"na_train_sample:{variant}") % _SEED_SPAN).astype(np.int64)


def sample_requests(
    table: pa.Table, recipe: NATrainRecipe, seed: int
) -> tuple[list[dict[str, Any]], list[ChatRequest]]:
    """One row and one request per sample of every item of one variant table."""
    spec = recipe.sampler
    rows = table.to_pylist()
    if not rows:
        return [], []
    bases = sample_seeds(seed, rows[0]["variant"], [r["id"] for r in rows])
    out_rows: list[dict[str, Any]] = []
    requests: list[ChatRequest] = []
    for row, base in zip(rows, bases.tolist(), strict=True):
        prompt = cot_prompt(row["question"], row["choices"])
        for j in range(spec.n):
            out_rows.append({**row, "sample_index": j, "seed": base + j, "prompt": prompt})
            requests.append(
                ChatRequest.chat(
                    prompt,
                    max_tokens=spec.max_tokens,
                    temperature=spec.temperature,
                    top_p=spec.top_p,
                    seed=base + j,
                )
            )
    return out_rows, requests


def samples_table(rows: list[dict[str, Any]], comps: list[Completion], model: str) -> pa.Table:
    """The `samples` config: each sample with its parsed letter and correctness."""
    records = []
    for row, comp in zip(rows, comps, strict=True):
        gold = LETTERS[row["answer"]]
        parsed = parse_answer(comp.text, len(row["choices"]))
        records.append(
            {
                **{k: row[k] for k in SAMPLES_ARROW.names if k in row},
                "gold": gold,
                "response": comp.text,
                "finish_reason": comp.finish_reason,
                "parsed": parsed,
                "correct": parsed == gold,
                "model": model,
            }
        )
    return pa.Table.from_pylist(records, schema=SAMPLES_ARROW)


def eval_index(source: Source, recipe: NATrainRecipe, options: BuildOptions) -> EvalIndex:
    """Question texts of the decontamination splits (read like the training splits)."""
    spec = recipe.decontamination
    location = spec.location or options.source or recipe.source.hub_id
    questions: list[str] = []
    for split in spec.splits:
        loaded = source.load(
            split,
            location=location,
            config=spec.config or recipe.source.config,
            revision=recipe.source.revision,
        )
        questions += loaded.items.column("question").to_pylist()
    origin = f"{location or source.hub_id} ({', '.join(spec.splits)})"
    return EvalIndex.from_questions(questions, origin)


def preparing(
    recipe: NATrainRecipe, options: BuildOptions, source: Source, index: EvalIndex, seed: int
) -> Generator[Step, None, Prepared]:
    """Load every split; quarantine evaluation questions, then ineligible items, then items
    not NA-applicable; build the variants of the rest (the build's first steps)."""
    builders = make_builders(recipe)  # type: ignore[arg-type]  # same variant specs as `na`
    na_texts = inserted_texts(builders, "has_none_option")
    label_source = build_label_source(recipe, options)
    per_builder: dict[str, list[pa.Table]] = {b.config_name: [] for b in builders}
    excluded: list[pa.Table] = []
    sources: dict[str, Any] = {}
    counts = {"checked": 0, "exact": 0, "normalised_only": 0}
    location = options.source or recipe.source.hub_id
    usable = 0
    splits = options.splits or recipe.source.splits
    for split in splits:
        loaded = load_split(source, recipe, location, split, recipe.source.config, seed)
        items = loaded.items if options.limit is None else loaded.items.slice(0, options.limit)
        sources[split] = split_record(loaded, items)
        yield Step("load", f"load {split}")
        questions = items.column("question").to_pylist()
        for k, v in contamination_counts(questions, index).items():
            counts[k] += v
        clean = split_by_flags(items, contamination_flags(questions, index))
        audit = audit_items(clean.eligible, na_texts)
        yield Step("audit", f"audit {split}", quarantined=audit.excluded)
        eligible, label_cols, label_excluded, _ = label_split(audit.eligible, label_source, split)
        excluded += [clean.excluded, audit.excluded, label_excluded]
        usable += eligible.num_rows
        columns = ItemColumns.from_table(eligible, label_cols)
        for b in builders:
            per_builder[b.config_name].append(b.build(columns, seed))
        yield Step("perturb", split)
    # the splits are pooled into one `train` split: only a pool with no usable item is empty
    require_items(" + ".join(splits), usable, pa.concat_tables(excluded))
    variants = [pa.concat_tables(tables) for tables in per_builder.values()]
    return Prepared(variants, pa.concat_tables(excluded), sources, counts)


def sample(
    recipe: NATrainRecipe, variants: list[pa.Table], options: BuildOptions, seed: int
) -> tuple[pa.Table, RunStats, str]:
    """Every sample of every variant through the cached runner: (samples table, stats, model)."""
    rows: list[dict[str, Any]] = []
    requests: list[ChatRequest] = []
    for table in variants:
        r, q = sample_requests(table, recipe, seed)
        rows += r
        requests += q
    spec = recipe.sampler
    backend: Backend = open_backend(spec)
    try:
        with ResponseCache(options.cache or default_cache_path()) as cache:
            distinct, cached = count_hits(backend, cache, requests, NAMESPACE)
            job = JobPlan(
                f"sample {len(requests):,} answer(s) ({spec.n} per variant of an item)",
                backend.model_id,
                distinct,
                cached,
            )
            job.require_confirmation(options.yes)
            comps, stats = run_cached(
                backend,
                requests,
                cache,
                namespace=NAMESPACE,
                chunk_size=spec.chunk_size,
                progress=options.progress,
                on_chunk=estimate_hook(job),
            )
    finally:
        backend.close()
    failed = [c.error for c in comps if c.error is not None]
    if failed:
        raise NabenchError(
            f"{len(failed)} of {len(comps)} sample requests failed (first: {failed[0]}); "
            "finished samples are cached, run the build again to retry the rest"
        )
    return samples_table(rows, comps, backend.model_id), stats, backend.model_id


def selection_tables(recipe: NATrainRecipe, samples: pa.Table) -> dict[str, pa.Table]:
    chosen: Selection = select(
        samples, recipe.sft.variants, recipe.dpo.variants, recipe.dpo.pairing
    )
    return {
        "sft": pa.Table.from_pylist(chosen.sft, schema=SFT_ARROW),
        "dpo": pa.Table.from_pylist(chosen.dpo, schema=DPO_ARROW),
        "samples": samples,
        "discarded": pa.Table.from_pylist(chosen.discarded, schema=DISCARDED_ARROW),
    }


def per_variant(tables: dict[str, pa.Table], n: int) -> list[dict[str, Any]]:
    """Per variant, for the card and the manifest: sets, kept, keep rate, rows written."""

    def by_variant(config: str) -> Counter[str]:
        return Counter(tables[config].column("variant").to_pylist())

    samples = tables["samples"].select(["variant", "correct"]).to_pandas()
    accuracy = samples.groupby("variant", sort=False)["correct"].mean()
    discarded = tables["discarded"].select(["variant", "reason"]).to_pylist()
    dropped = Counter((d["variant"], d["reason"]) for d in discarded)
    sft, dpo = by_variant("sft"), by_variant("dpo")
    out = []
    for variant, share in accuracy.items():
        sets = int((samples["variant"] == variant).sum()) // n
        right, wrong = dropped[(variant, ALL_CORRECT)], dropped[(variant, ALL_INCORRECT)]
        out.append(
            {
                "variant": variant,
                "sets": sets,
                "kept": sets - right - wrong,
                "keep_rate": round((sets - right - wrong) / sets, 4) if sets else None,
                "all_correct": right,
                "all_incorrect": wrong,
                "sample_accuracy": round(float(share), 4),
                "sft_rows": sft[variant],
                "dpo_rows": dpo[variant],
            }
        )
    return out


# What an na-train build is for (croissant.json's data use cases).
NA_TRAIN_USES = (
    "Fine-tuning (SFT / DPO) on None-of-the-above items, decontaminated against the "
    "evaluation splits named in build.json.",
)


def build_na_train(recipe: NATrainRecipe, options: BuildOptions) -> BuildResult:
    """Run the whole `na-train` pipeline and stage the result in `options.out`."""
    return drive(NATrainBuild, recipe, options)


class NATrainBuild(KindBuild):
    """An na-train build: the evaluation index, per split load, audit and variants, then the
    samples and the training rows chosen from them."""

    uses = NA_TRAIN_USES
    refuses_sample = "--sample applies to NA and artifact builds; na-train takes --limit"

    def __init__(self, job: Resolved) -> None:
        super().__init__(job)
        self.recipe = job.recipe
        self.source = get_source(job.recipe.source.dataset)
        self.steps_total = 3 + 3 * len(job.splits)

    def steps(self) -> Steps:
        recipe, options, seed = self.recipe, self.job.options, self.job.seed
        self.index = eval_index(self.source, recipe, options)
        yield Step("load", "decontamination splits")
        self.prepared = yield from preparing(recipe, options, self.source, self.index, seed)
        samples, self.stats, self.model = sample(recipe, self.prepared.variants, options, seed)
        yield Step("sample")
        self.tables = selection_tables(recipe, samples)
        # An empty config is not written: `datasets` cannot load a split without rows.
        tables = {**self.tables, "excluded": self.prepared.excluded}
        yield Step(
            "select", tables=[StagedTable(c, SPLIT, t) for c, t in tables.items() if t.num_rows]
        )

    def validate(self, staged: Sequence[StagedTable]) -> ValidationReport:
        """Every selected table, an empty one too (it is not staged)."""
        parts = [StagedTable(c, SPLIT, t) for c, t in self.tables.items()]
        return validate_na_train(parts, parse_answer, self.index)

    def manifest(self, staged: Sequence[StagedTable], report: ValidationReport) -> dict[str, Any]:
        recipe, source, index, job = self.recipe, self.source, self.index, self.job
        sampler = recipe.sampler
        self.fields = {
            **manifest_header("na-train", recipe, job.seed),
            "splits": job.splits,
            "limit": job.options.limit,
            "source": source_section(source, recipe, job.location, self.prepared.sources),
            "model": {"backend": sampler.backend, "engine": sampler.engine, "model_id": self.model},
            "sampling": sampler.model_dump(include={"n", "temperature", "top_p", "max_tokens"}),
            "counts": row_counts(staged),
            "per_variant": per_variant(self.tables, sampler.n),
            "exclusions": exclusion_counts(self.prepared.excluded),
            "decontamination": {
                "against": index.origin,
                "eval_rows": index.rows,
                **self.prepared.contamination,
            },
            "licence": {"source": source.license, "outputs": recipe.licence.outputs},
            "validation": {"violations": 0, "rules": "nabench.validate.na_train"},
            "warnings": [
                f"no {c} row: no {c} variant has a sample set with both a right and a wrong "
                f"answer (see `discarded`); the build has no `{c}` config"
                for c in ("sft", "dpo")
                if not self.tables[c].num_rows
            ],
        }
        return self.fields

    def card(self, manifest: Manifest, staged: list[StagedTable], report: ValidationReport) -> Card:
        return _card(self.recipe, self.source, self.fields)

    def after_commit(self, out: Path) -> None:
        write_stats(self.stats, default_stats_path(out))


def _card(recipe: NATrainRecipe, source: Source, manifest: dict[str, Any]) -> Card:
    """The card: model, sampling, counts and keep rates per variant, licences, contamination."""
    total = sum(sum(c.values()) for c in manifest["counts"].values())
    source_id = recipe.source.hub_id or source.hub_id
    metadata = {
        "license": source.license,
        "language": [source.language],
        "pretty_name": f"{source.pretty_name} (nabench {recipe.name})",
        "task_categories": ["text-generation", "question-answering"],
        "size_categories": [size_category(total)],
        "source_datasets": [source_id],
        "tags": ["nabench", "none-of-the-above", "sft", "dpo", "trl", source.name],
    }
    context = {
        **manifest,
        "pretty_name": metadata["pretty_name"],
        "summary": recipe.description,
        "split": SPLIT,
        "sft_variants": recipe.sft.variants,
        "dpo_variants": recipe.dpo.variants,
        "pairing": recipe.dpo.pairing,
        "citation": source.citation,
    }
    return Card("na_train_card.md.jinja", metadata, context)
