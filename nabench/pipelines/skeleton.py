"""The pipeline skeleton every recipe kind shares: build options, result, phase clock, and the
build.json / card parts the item builds (NA variants, artifacts) assemble the same way."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from nabench.audit.eligibility import Audit, exclusion_counts
from nabench.core.errors import NabenchError
from nabench.schemas.manifest import Manifest
from nabench.schemas.protocol import Protocol, get_protocol
from nabench.schemas.recipe import no_repeats
from nabench.sources import LoadedSplit, Source
from nabench.sources.sample import check_sample_size, select_items
from nabench.stage.cards import size_category
from nabench.stage.hub_layout import StagedTable, manifest_header, row_counts

# Eligibility reasons that mean the source row itself is malformed (fatal with --strict).
DATA_DEFECTS = ("missing_question", "empty_choice", "duplicate_choices")


@dataclass(frozen=True)
class BuildOptions:
    source: str | None = None
    out: Path | None = None
    splits: Sequence[str] | None = None
    limit: int | None = None
    sample: int | None = None  # a seeded sample of N items stratified by subject
    protocol: str | None = None  # a preset of nabench.schemas.protocol (None: nabench's own)
    seed: int | None = None
    labels: str | None = None  # "none", "llm", a path, or None for the recipe's setting
    cache: Path | None = None  # LLM response cache (labeling); default ~/.cache/nabench
    strict: bool = False
    progress: bool = True
    yes: bool = False  # a long model job (labeling) may start without --labels llm
    # reproducing a recorded build (`validate --source`): a `--sample` larger than the items,
    # which older versions built as all of them, is rebuilt the same way, not refused
    rebuild: bool = False

    def __post_init__(self) -> None:
        # `--source ""` (an unset shell variable) was falsy, so the recipe's Hub id was read
        if self.source is not None and not self.source.strip():
            raise NabenchError(
                "--source is empty: give a folder, data file or Hub id, or leave it out "
                "for the recipe's own source"
            )
        try:  # as a recipe's `source.splits`: a split read twice was staged or sampled twice
            no_repeats("--split")(list(self.splits or ()))
        except ValueError as exc:
            raise NabenchError(f"{exc}: give each split once") from None


@dataclass(frozen=True)
class BuildResult:
    out: Path
    counts: dict[str, dict[str, int]]
    exclusions: dict[str, Any]
    letter_shares: dict[str, dict[str, float]]
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase


class PhaseClock:
    """Wall time per pipeline phase (reported by `bench/`, never written to the manifest)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - t0)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds


def check_strict(excluded: pa.Table, strict: bool) -> None:
    """With --strict, a malformed source row (a data defect) is an error, not a quarantine."""
    if not strict or excluded.num_rows == 0:
        return
    reasons = excluded.column("reasons").to_pylist()
    ids = excluded.column("id").to_pylist()
    for item_id, rs in zip(ids, reasons, strict=True):
        bad = [r for r in rs if r in DATA_DEFECTS]
        if bad:
            raise NabenchError(f"--strict: source row {item_id} is malformed ({', '.join(bad)})")


def build_protocol(name: str | None) -> Protocol:
    """The protocol preset a build follows (an error if the preset is not for builds)."""
    protocol = get_protocol(name)
    if "build" not in protocol.applies_to:
        raise NabenchError(
            f"protocol {protocol.name!r} applies to {', '.join(protocol.applies_to)}, not builds"
        )
    return protocol


@dataclass(frozen=True)
class Resolved:
    """What every kind resolves the same way from the recipe and the build options."""

    recipe: Any
    options: BuildOptions

    @property
    def seed(self) -> int:
        return int(self.recipe.seed if self.options.seed is None else self.options.seed)

    @property
    def out(self) -> Path:
        return self.options.out or Path("build") / self.recipe.name

    @property
    def splits(self) -> list[str]:  # item kinds
        return list(self.options.splits or self.recipe.source.splits)

    @property
    def location(self) -> str | None:  # item kinds: where the source is read from
        return self.options.source or self.recipe.source.hub_id

    @cached_property
    def protocol(self) -> Protocol:  # resolved only by the kinds that follow one
        return build_protocol(self.options.protocol)


def item_manifest_head(kind: str, job: Resolved) -> dict[str, Any]:
    """The first keys of an item build's build.json (NA and artifact builds), in order."""
    return {
        **manifest_header(kind, job.recipe, job.seed),
        "splits": job.splits,
        "limit": job.options.limit,
        "sample": job.options.sample,
        "protocol": job.protocol.record(),
    }


def load_split(
    source: Source, recipe: Any, location: str | None, split: str, config: str | None, seed: int
) -> LoadedSplit:
    """One split of the recipe's source, at the recipe's revision."""
    return source.load(
        split, location=location, config=config, revision=recipe.source.revision, seed=seed
    )


def audited_selection(
    items: pa.Table,
    audit: Callable[[pa.Table], Audit],
    *,
    split: str,
    limit: int | None,
    sample: int | None,
    seed: int,
    rebuild: bool = False,
) -> tuple[pa.Table, Audit, Audit]:
    """(the rows a build uses, their audit, the whole split's audit).

    `--limit N` uses the first N source rows, audited (some may be excluded). `--sample N`
    draws N of the items the audit keeps (stratified by subject, seeded per item), so a
    sampled build has N usable items; the whole split's exclusions are not part of it. The
    whole split's audit is every builder's donor pool, so partial builds borrow what the full
    build does."""
    whole = audit(items)
    if sample is not None and limit is None:
        usable = whole.eligible.num_rows
        if usable == 0:  # nothing to sample: the whole audit, so `require_items` says why
            return whole.eligible, whole, whole
        if not rebuild:
            what = f"items of split {split} that pass the eligibility audit"
            check_sample_size(sample, usable, what, "build")
    if limit is not None or sample is None:
        used = select_items(items, limit=limit, sample=sample, seed=seed)
        return used, (whole if used.num_rows == items.num_rows else audit(used)), whole
    chosen = select_items(whole.eligible, sample=sample, seed=seed)
    return chosen, Audit(chosen, whole.excluded.slice(0, 0)), whole


def require_items(split: str, kept: int, excluded: pa.Table) -> None:
    """A split none of whose items is usable stops the build: each of its configs would be a
    table of 0 rows, which `load_dataset` cannot read, and the cause is the input's."""
    if kept:
        return
    counts = Counter(excluded.column("reason").to_pylist())
    why = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
    raise NabenchError(
        f"split {split} has no usable item: all {excluded.num_rows} were excluded ({why}), "
        "so its configs would have no rows"
    )


def split_record(loaded: LoadedSplit, items: pa.Table) -> dict[str, Any]:
    """build.json's `source.splits` entry: where a split came from, rows read and rows used."""
    return {
        "origin": loaded.origin,
        "fingerprint": loaded.fingerprint,
        "files": loaded.files,
        "rows_read": loaded.items.num_rows,
        "rows_used": items.num_rows,
    }


def item_manifest_outcome(
    staged: Sequence[StagedTable], excluded: Sequence[pa.Table], rules: str, **checks: Any
) -> dict[str, Any]:
    """build.json's `counts`, `exclusions`, the build's own `checks`, then `validation`, in
    order. Only a build that passed validation gets a manifest, hence 0 violations."""
    return {
        "counts": row_counts(staged),
        "exclusions": exclusion_counts(pa.concat_tables(excluded)),
        **checks,
        "validation": {"violations": 0, "rules": rules},
    }


def item_card_parts(
    manifest: Manifest,
    source: Source,
    *,
    tags: list[str],
    summary: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Hub front matter of a multiple-choice build (NA variants, artifacts) and the card
    context keys they share, read from the manifest (a card re-rendered from an older build.json
    says what that build was); `summary` begins the text for a recipe without a description."""
    recipe = manifest.recipe
    source_id = recipe["source"].get("hub_id") or source.hub_id
    n_rows = max((sum(c.values()) for c in manifest.counts.values()), default=0)
    metadata = {
        "license": source.license,
        "language": [source.language],
        "pretty_name": f"{source.pretty_name} (nabench {recipe['name']})",
        "task_categories": ["multiple-choice", "question-answering"],
        "task_ids": ["multiple-choice-qa"],
        "size_categories": [size_category(n_rows)],
        "source_datasets": [source_id],
        "tags": [*tags, source.name],
    }
    context = {
        "pretty_name": metadata["pretty_name"],
        "summary": recipe.get("description") or f"{summary} of {source.pretty_name}.",
        "seed": manifest.seed,
        "source_id": source_id,
        "source_config": (manifest.source and manifest.source.config) or "default",
        "license": source.license,
        "citation": source.citation,
    }
    return metadata, context
