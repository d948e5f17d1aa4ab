"""The one build driver: a recipe kind supplies its steps, validator, manifest and card; `drive`
stages, times, shows progress, checks `--strict`, validates, writes the manifest, merges the
previous card in `out` and returns the result, the same way for every kind."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from tqdm.auto import tqdm

from nabench.core.errors import NabenchError, ValidationFailed
from nabench.core.out_guard import check_cache
from nabench.core.safe_load import ParseLimits, read_text
from nabench.pipelines.skeleton import BuildOptions, BuildResult, PhaseClock, Resolved, check_strict
from nabench.schemas.manifest import MANIFEST, Manifest, read_manifest_file
from nabench.stage.cards import finalize_parts, render_body, split_front_matter
from nabench.stage.croissant import CardFacts
from nabench.stage.hub_layout import StagedTable, StagingArea
from nabench.validate.invariants import ValidationReport, summarise_violations


@dataclass(frozen=True)
class Card:
    """A kind's card: its template, its front matter (less `configs` and `dataset_info`,
    which staging derives from the tables) and the template's context."""

    template: str
    metadata: dict[str, Any]
    context: dict[str, Any]


@dataclass(frozen=True)
class Step:
    """A unit of a kind's work, yielded once done: its phase (the clock's key), what the
    progress bar shows, the tables it made (staged in order), the source rows it quarantined
    (fatal data defects under `--strict`), and a folder of the tree it writes (a report)."""

    phase: str
    label: str = ""
    tables: Sequence[StagedTable] = ()
    quarantined: pa.Table | None = None
    folder: tuple[str, Callable[[Path], None]] | None = None


# A kind's steps (a generator: `drive` closes it when the build stops early).
Steps = Generator[Step, None, None]


class KindBuild:
    """One build of one recipe kind, as `drive` runs it. A kind supplies its `steps`, its
    validator (the one `nabench validate` runs on the written files), build.json's fields in
    order (`files` and `lm_eval` are staging's), its card, and what croissant.json states
    beyond the manifest (`facts`: limitations, uses)."""

    lm_eval = False  # also write lm-eval tasks (the multiple-choice kinds)
    steps_total: int | None = None  # the progress bar's length in steps
    uses: tuple[str, ...] = ()  # what a build of the kind is for
    # a kind with no source items to sample refuses `--sample` with this one line
    refuses_sample: str | None = None

    def __init__(self, job: Resolved) -> None:
        if self.refuses_sample is not None and job.options.sample is not None:
            raise NabenchError(self.refuses_sample)
        self.job = job

    def steps(self) -> Steps:
        raise NotImplementedError

    def validate(self, staged: Sequence[StagedTable]) -> ValidationReport:
        raise NotImplementedError

    def manifest(self, staged: Sequence[StagedTable], report: ValidationReport) -> dict[str, Any]:
        raise NotImplementedError

    def card(self, manifest: Manifest, staged: list[StagedTable], report: ValidationReport) -> Card:
        raise NotImplementedError

    def facts(self, manifest: Manifest) -> CardFacts:
        return CardFacts(uses=self.uses)

    def exclusions(self, fields: dict[str, Any]) -> dict[str, Any]:
        return dict(fields.get("exclusions") or {})

    def after_commit(self, out: Path) -> None:
        """Side files beside the committed build (run statistics)."""


def drive(kind: Callable[[Resolved], KindBuild], recipe: Any, options: BuildOptions) -> BuildResult:
    """Build `recipe` with `kind` into `options.out` (default `build/<name>`): nothing reaches
    `out` unless validation passes and `commit` swaps the finished tree in."""
    job = Resolved(recipe, options)
    if options.cache is not None:  # the swap that commits the build would delete it
        check_cache(options.cache, job.out)
    build = kind(job)
    clock = PhaseClock()
    with StagingArea(job.out) as area:
        # read now, before any model job: a card that cannot be merged stops the build here
        previous = previous_release(job.out, recipe.kind, recipe.name, recipe.version)
        shown = {"desc": f"build {recipe.name}", "disable": not options.progress, "unit": "step"}
        bar = tqdm(total=build.steps_total, **shown)
        with closing(build.steps()) as steps, bar:
            for step in _timed(steps, clock):
                _take(step, area, clock, options.strict)
                bar.set_postfix_str(step.label or step.phase)
                bar.update()
        staged = area.tables
        with clock("validate"):
            validation = build.validate(staged)
        if validation.violations:
            raise ValidationFailed(summarise_violations(validation.violations))
        fields = build.manifest(staged, validation)
        manifest = Manifest.model_validate(fields)
        card = build.card(manifest, staged, validation)
        repo_id = recipe.publish.repo_id or f"ORG/{recipe.name}"
        readme = card_renderer(previous, recipe.version, repo_id, manifest, card)
        with clock("stage"):  # what is left of the background writes, then README + manifest
            area.commit(readme, manifest, build.facts(manifest), lm_eval=build.lm_eval)
    build.after_commit(job.out)
    return BuildResult(
        job.out,
        manifest.counts,
        build.exclusions(fields),
        dict(fields.get("letter_shares") or {}),
        list(fields.get("warnings") or []),
        clock.seconds,
    )


def _timed(steps: Iterator[Step], clock: PhaseClock) -> Iterator[Step]:
    """Each step as it is done, the time it took added to its phase."""
    while True:
        t0 = time.perf_counter()
        step = next(steps, None)
        if step is None:
            return
        clock.add(step.phase, time.perf_counter() - t0)
        yield step


def _take(step: Step, area: StagingArea, clock: PhaseClock, strict: bool) -> None:
    """A step's quarantine checked (`--strict`), its tables staged, its folder written."""
    if step.quarantined is not None:
        check_strict(step.quarantined, strict)
    for st in step.tables:
        area.add(st)  # written in the background while the build goes on
    if step.folder is not None:
        rel, write = step.folder
        with clock(step.phase):
            write(area.folder(rel))


def default_stats_path(out: Path) -> Path:
    """``<out>.stats.json`` beside the output folder: a model job's run statistics."""
    return out.parent / f"{out.name}.stats.json"


def card_renderer(
    previous: PreviousRelease, version: str, repo_id: str, manifest: Manifest, card: Card
) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]], str]:
    """The README renderer `StagingArea.commit` calls: the kind's card (its context with what
    every card names: nabench and recipe version, repo id), finalised on top of the previous
    release of this recipe in `out`: its hand-added metadata is kept, its changelog carried
    over, the loading snippet names this version."""
    named = {"nabench_version": manifest.nabench_version, "recipe_name": manifest.recipe_name}
    context = {**named, "recipe_version": version, "repo_id": repo_id, **card.context}

    def render(configs: list[dict[str, Any]], infos: list[dict[str, Any]]) -> str:
        return finalize_parts(
            {**card.metadata, "configs": configs, "dataset_info": infos},
            render_body(card.template, context),
            version=version,
            repo_id=repo_id,
            manifest=manifest,
            previous_readme=previous.readme,
            previous_manifest=previous.manifest,
            previous_build=previous.built,
        )

    return render


@dataclass(frozen=True)
class PreviousRelease:
    """The card of the build now in `out` and, unless it is a rebuild of this version, its
    manifest (the changelog compares against an earlier release, not against itself);
    `built` is that manifest whatever its version (what its card's metadata came from)."""

    readme: str | None = None
    manifest: Manifest | None = None
    built: Manifest | None = None


# A card is a few hundred KB at most; a bigger "card" is not one nabench wrote.
CARD_LIMITS = ParseLimits(max_bytes=16 * 2**20)


def previous_release(out: Path, kind: str, name: str, version: str) -> PreviousRelease:
    """What a build of recipe `name` (of `kind`) carries over from the build now in `out`:
    nothing unless that is a build of the same recipe (another dataset's card metadata and
    changelog are not this one's). Its card is read now, bounded and strictly: a card that
    is not UTF-8 or whose front matter cannot be parsed is a one-line error before any work."""
    built = out / MANIFEST
    if not built.is_file():
        return PreviousRelease()
    previous = read_manifest_file(built)
    if ((previous.kind or "na"), previous.recipe_name) != (kind, name):
        return PreviousRelease()
    path = out / "README.md"
    readme = None
    if path.is_file():
        readme = read_text(path, CARD_LIMITS)
        split_front_matter(readme, str(path))  # refused now, not after a model job
    same_version = previous.recipe_version == version
    return PreviousRelease(readme, None if same_version else previous, previous)
