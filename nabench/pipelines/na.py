"""The build pipeline: source -> eligibility audit -> labels -> perturb -> validate -> stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from nabench.audit.eligibility import Audit, audit_items
from nabench.audit.patterns import option_patterns
from nabench.audit.redux import ReduxAudit, flagged_total
from nabench.core.errors import NabenchError
from nabench.perturb import Builder, ItemColumns, builders_for
from nabench.perturb.recipe import Recipe
from nabench.pipelines.driver import Card, KindBuild, Step, Steps, drive
from nabench.pipelines.labels import build_label_source, label_split
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
from nabench.schemas.manifest import Manifest
from nabench.sources import Source, get_source
from nabench.sources.sample import SAMPLE_DRAW
from nabench.stage.cards import context as cc
from nabench.stage.croissant import CardFacts, partial_build_lines
from nabench.stage.hub_layout import StagedTable, source_section
from nabench.validate.invariants import (
    LETTER_SHARE_WARNING,
    ValidationReport,
    letter_distribution,
)
from nabench.validate.kinds import NA_SIDE_CONFIGS, validate_na

# What an NA build is for (croissant.json's data use cases).
NA_USES = (
    "Evaluating multiple-choice models on None-of-the-above / All-of-the-above perturbations "
    "of the source items against the unchanged `original` config (paired by `id`).",
    "Not for training: the items are (perturbed) test items of a public benchmark.",
)


def make_builders(recipe: Recipe) -> list[Builder]:
    """One builder per output config, in recipe order (each variant's builder class reads
    its spec: every extra NA phrasing gets its own config)."""
    out = [b for spec in recipe.variants for b in builders_for(spec)]
    names = [b.config_name for b in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise NabenchError(f"recipe {recipe.name}: duplicate config names {sorted(dupes)}")
    return out


def build(recipe: Recipe, options: BuildOptions) -> BuildResult:
    """Run the whole pipeline for a recipe and stage the result in `options.out`."""
    return drive(NABuild, recipe, options)


class NABuild(KindBuild):
    """An NA build: per split load, audit, label, one config per builder, the side tables."""

    lm_eval = True

    def __init__(self, job: Resolved) -> None:
        super().__init__(job)
        recipe = self.recipe = job.recipe
        self.source = get_source(recipe.source.dataset)
        self.protocol = job.protocol  # only recorded; a preset not for builds stops here
        builders = self.builders = make_builders(recipe)
        self.texts = (
            inserted_texts(builders, "has_none_option"),
            inserted_texts(builders, "has_all_option"),
        )
        self.label_source = build_label_source(recipe, job.options)
        self.redux = ReduxAudit(recipe.audit.redux) if recipe.audit.redux else None
        self.steps_total = len(job.splits) * (4 + len(self.builders))
        self.sources_meta: dict[str, Any] = {}
        self.excluded: list[pa.Table] = []

    def steps(self) -> Steps:
        job, recipe, opts, redux = self.job, self.recipe, self.job.options, self.redux
        for split in job.splits:
            loaded = load_split(
                self.source, recipe, job.location, split, recipe.source.config, job.seed
            )
            yield Step("load", f"load {split}")
            unknown = set(recipe.exclude_subjects) - set(loaded.items.column("subject").to_pylist())
            if unknown:
                raise NabenchError(
                    f"recipe {recipe.name}: exclude_subjects {sorted(unknown)} not in the source"
                )
            # The items used (`--limit` / `--sample`, see `audited_selection`), their audit and
            # the donor pool: the audited *whole* split, so a partial build borrows exactly what
            # the full build borrows.
            items, audit, whole = audited_selection(
                loaded.items,
                self._audit,
                split=split,
                limit=opts.limit,
                sample=opts.sample,
                rebuild=opts.rebuild,
                seed=job.seed,
            )
            annotations = redux.join(items, split)[1] if redux else None  # Redux, if asked for
            self.sources_meta[split] = split_record(loaded, items)
            yield Step("audit", f"audit {split}", quarantined=audit.excluded)
            eligible, label_cols, label_excluded, published = label_split(
                audit.eligible, self.label_source, split
            )
            excluded = pa.concat_tables([audit.excluded, label_excluded])
            require_items(split, eligible.num_rows, excluded)
            self.excluded.append(excluded)
            yield Step("label", f"label {split}")
            columns = ItemColumns.from_table(eligible, label_cols, whole.eligible)
            for b in self.builders:
                st = StagedTable(b.config_name, split, b.build(columns, job.seed))
                yield Step("perturb", f"{b.config_name}/{split}", [st])
            side = [StagedTable("excluded", split, excluded)]
            if annotations is not None:
                side.append(StagedTable("redux", split, annotations))
            if published is not None:
                side.append(StagedTable("labels", split, published))
            yield Step("stage", f"side tables/{split}", side)

    def _audit(self, table: pa.Table) -> Audit:
        # A donor-pool pass (split None): Redux flags quarantine, the join is not reported.
        flags = self.redux.join(table, None)[0] if self.redux else {}
        return audit_items(
            table, *self.texts, exclude_subjects=self.recipe.exclude_subjects, extra_flags=flags
        )

    def validate(self, staged: Sequence[StagedTable]) -> ValidationReport:
        return validate_na(staged, self.job.seed)

    def manifest(self, staged: Sequence[StagedTable], report: ValidationReport) -> dict[str, Any]:
        job, label_source, redux = self.job, self.label_source, self.redux
        checks = {"audit_patterns": option_patterns().manifest(), **_letter_checks(staged)}
        return {
            **item_manifest_head("na", job),
            "source": source_section(self.source, self.recipe, job.location, self.sources_meta),
            **item_manifest_outcome(staged, self.excluded, "nabench.validate.invariants", **checks),
            "labels": {
                "mode": label_source.mode if label_source else "none",
                **(label_source.info() if label_source else {}),
            },
            **({"redux": redux.summary()} if redux else {}),
        }

    def card(self, manifest: Manifest, staged: list[StagedTable], report: ValidationReport) -> Card:
        tags = ["nabench", "none-of-the-above", "perturbation"]
        metadata, context = item_card_parts(
            manifest, self.source, tags=tags, summary="Perturbed variants"
        )
        context.update(_na_card_context(self.recipe, self.source, manifest, staged, report))
        return Card("na_card.md.jinja", metadata, context)

    def facts(self, manifest: Manifest) -> CardFacts:
        """What croissant.json states beyond the manifest: limitations and use cases."""
        return CardFacts(tuple(_limitations(manifest)), NA_USES)


def inserted_texts(builders: Sequence[Builder], reason: str) -> tuple[str, ...]:
    """What the builders insert for one audit reason (an item already holding it is excluded)."""
    return tuple(t for b in builders if b.inserted_reason == reason for t in b.inserted_texts)


def _letter_checks(staged: Sequence[StagedTable]) -> dict[str, Any]:
    """build.json's `letter_shares` of the key per config/split, and `warnings` for each share
    over 40 % (a model could score by always picking that letter)."""
    letter_shares = {
        f"{st.config}/{st.split}": letter_distribution(st.table)
        for st in staged
        if st.config not in NA_SIDE_CONFIGS
    }
    warnings = [
        f"{key}: letter {letter} is the key in {share:.1%} of rows (> 40%)"
        for key, shares in letter_shares.items()
        for letter, share in shares.items()
        if share > LETTER_SHARE_WARNING
    ]
    return {"letter_shares": letter_shares, "warnings": warnings}


def _na_card_context(
    recipe: Recipe,
    source: Source,
    manifest: Manifest,
    staged: Sequence[StagedTable],
    validation: ValidationReport,
) -> dict[str, Any]:
    """The NA card's own sections: splits, variants, counts, labels, exclusions, letters."""
    counts, record = manifest.counts, manifest.record()
    source_splits: dict[str, Any] = record["source"]["splits"]
    split_names = list(dict.fromkeys(s for per in counts.values() for s in per))
    builders = make_builders(recipe)
    first_ids = [st.table.column("id")[0].as_py() for st in staged if st.table.num_rows]
    letters, letter_rows = cc.letter_rows(record["letter_shares"])
    return {
        "total_items": sum(m["rows_used"] for m in source_splits.values()),
        "id_example": first_ids[0] if first_ids else f"{source.name}/...",
        "limit": manifest.limit,
        "source_revision": recipe.source.revision,
        "source_splits": [{"split": s, **m} for s, m in source_splits.items()],
        "variants": [
            {
                "config": b.config_name,
                "why": b.why,
                # the phrasing a config inserts, where its `why` does not already name it
                "na_text": next((t for t in b.inserted_texts if t not in b.why), None),
            }
            for b in builders
        ],
        "perturbed_configs": [c for c in counts if c not in NA_SIDE_CONFIGS],
        "has_labels": "labels" in counts,
        "n_labeled": sum(counts.get("labels", {}).values()),
        "split_names": split_names,
        "count_rows": [
            {"config": c, "counts": [per.get(s, 0) for s in split_names]}
            for c, per in counts.items()
        ],
        "fields": cc.field_rows(source.field_notes),
        "labeler_lines": cc.labeler_lines(record["labels"]),
        "exclusions_total": record["exclusions"]["total"],
        "exclusions": record["exclusions"]["by_reason"],
        "audit_patterns": record["audit_patterns"],
        "redux": _redux_card(manifest.redux),
        "na_rates": cc.na_rates(staged),
        "letters": letters,
        "letter_rows": letter_rows,
        "shortcuts": cc.shortcut_rows(staged, NA_SIDE_CONFIGS),
        "warnings": manifest.warnings or [],
        # the rules that ran on this build's configs, as their records describe them
        "invariants": [(rule.name, rule.description) for rule in validation.rules],
        "draws": _draw_lines(source, builders, manifest),
        "limitations": _limitations(manifest),
        "variant_citations": cc.variant_citations([key for b in builders for key in b.cites]),
    }


def _draw_lines(source: Source, builders: Sequence[Builder], manifest: Manifest) -> list[str]:
    """The card's per-item draws, stated from the `Draw`s the code makes (one per purpose)."""
    draws = [*source.draws, *([SAMPLE_DRAW] if manifest.sample else [])]
    draws += [d for b in builders for d in b.draws]
    unique = {d.purpose: d for d in draws}
    return [d.card_line() for d in unique.values()]


def _redux_card(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The card's MMLU-Redux figures: items checked, flagged, per error type (all splits)."""
    if summary is None:
        return None
    by_type: dict[str, int] = {}
    for per in summary["by_split"].values():
        for error_type, n in per.items():
            by_type[error_type] = by_type.get(error_type, 0) + n
    return {
        **summary,
        "checked": sum(by_type.values()),
        "flagged": flagged_total(summary),
        "unmatched_count": len(summary["unmatched"]),
        "by_type": dict(sorted(by_type.items())),
    }


def _limitations(manifest: Manifest) -> list[str]:
    """The card's limitations: what NA-keyed items, inserted texts and the source cannot
    guarantee, and any --limit/--sample that makes this build partial."""
    limitations = [
        "NA-keyed items are only valid when no remaining option is defensible; "
        + (
            "items were filtered by an NA-applicability label, which can be wrong."
            if manifest.label_mode != "none"
            else "this build used no NA-applicability labels, so some NA-keyed items may "
            "keep a defensible option."
        ),
        "Inserted texts are English phrasings; the letter distribution of the key follows "
        "the source (see above), which a model may exploit.",
        "Source errors (wrong keys, ambiguous questions) carry over to every variant.",
    ]
    left_out = manifest.recipe.get("exclude_subjects") or []
    if left_out:
        limitations.append(
            "Subjects left out by the recipe (`exclude_subjects`), in no perturbed config: "
            + ", ".join(f"`{s}`" for s in left_out)
            + "."
        )
    redux = _redux_card(manifest.redux)
    if redux is not None:
        limitations.append(
            f"MMLU-Redux checked {redux['checked']} of the build's items (it re-annotated a "
            "sample per subject); errors in the others are not caught."
        )
    return [*limitations, *partial_build_lines(manifest)]
