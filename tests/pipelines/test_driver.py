"""The one build driver (`nabench.pipelines.driver`), the same for every recipe kind: a rebuild
into the folder of a previous build keeps its card's hand-added metadata and changelog; every
build reports phase timings and draws a progress bar; a failed validation stops the build
before anything reaches `out`. Each kind is built small: NA and artifacts from real ARC rows,
selfknow and na-train with a scripted model (pipeline logic, not model output)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.scripted import Scripted, chat_body
from selfknow.scripted_model import openai_model, responder

from nabench.core.errors import NabenchError, ValidationFailed
from nabench.pipelines import artifacts, na, na_train, selfknow
from nabench.pipelines.registry import load_recipe, parse_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.check import Violation
from nabench.stage.cards import parse_changelog, split_front_matter, with_front_matter
from nabench.validate.invariants import ValidationReport

KINDS = ("na", "artifacts", "selfknow", "na-train")
# Where each kind's pipeline looks its validator up.
VALIDATORS = {
    "na": (na, "validate_na"),
    "artifacts": (artifacts, "validate_artifacts"),
    "selfknow": (selfknow, "validate_selfknow"),
    "na-train": (na_train, "validate_na_train"),
}
SELFKNOW: dict[str, Any] = {
    "kind": "selfknow",
    "name": "sk-driver",
    "version": "1.0.0",
    "seed": 7,
    "generator": {"styles": ["vanilla"], "n_per_class": 2, "max_tokens": 96, "chunk_size": 4},
    "classifier": {"max_tokens": 96, "chunk_size": 4},
}


def na_train_answers(_path: str, body: dict[str, Any], _n: int) -> tuple[int, Any]:
    """A letter chosen by the sample's seed, so some sample sets hold a right and a wrong one."""
    return 200, chat_body(f"Step by step.\nAnswer: {'ABCD'[int(body['seed']) % 4]}")


Builder = Callable[[str, Path], BuildResult]


@pytest.fixture
def build_kind(
    arc_dir: Path, mmlu_dir: Path, scripted_server: Callable[..., Scripted], tmp_path: Path
) -> Callable[..., BuildResult]:
    """`build_kind(kind, out, version, progress=False)`: a small build of that kind."""

    def build(kind: str, out: Path, version: str = "1.0.0", progress: bool = False) -> Any:
        options: dict[str, Any] = {"out": out, "progress": progress}
        if kind in ("na", "artifacts"):
            recipe = load_recipe(f"arc-{kind}", [f"version={version}"])
            options |= {"source": str(arc_dir), "limit": 12, "labels": "none"}
        elif kind == "selfknow":
            url = scripted_server(responder()).url
            recipe = parse_recipe({**openai_model(SELFKNOW, url), "version": version}, "x.yaml")
        else:
            url = scripted_server(na_train_answers).url
            sampler = f"sampler={{backend: openai, base_url: '{url}', model: m, n: 2}}"
            recipe = load_recipe(
                "mmlu-na-train", ["labels.mode=none", sampler, f"version={version}"]
            )
            options |= {"source": str(mmlu_dir), "splits": ["validation"], "limit": 6}
            options |= {"cache": tmp_path / "na-train.cache.sqlite", "yes": True}
        return run_recipe(recipe, BuildOptions(**options))

    return build


def hand_edit(readme: Path) -> None:
    """What a maintainer does to a published card: a metadata key added by hand, and the
    changelog entry of an earlier release written into the card."""
    metadata, body = split_front_matter(readme.read_text(encoding="utf-8"))
    metadata["paperswithcode_id"] = "hand-added-id"
    start, end = "<!-- nabench:changelog:start -->", "<!-- nabench:changelog:end -->"
    entry = "### v0.9.0\n\n- An earlier release, described by hand.\n"
    if start in body:
        body = body.replace(start, f"{start}\n{entry}", 1)
    else:
        body = f"{body.rstrip()}\n\n{start}\n{entry}{end}\n"
    readme.write_text(with_front_matter(metadata, body), encoding="utf-8")


@pytest.mark.parametrize("kind", KINDS)
def test_rebuild_keeps_the_previous_cards_metadata_and_changelog(
    kind: str, build_kind: Callable[..., BuildResult], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    build_kind(kind, out, "1.0.0")
    hand_edit(out / "README.md")
    build_kind(kind, out, "1.1.0")
    card = (out / "README.md").read_text(encoding="utf-8")
    metadata, _ = split_front_matter(card)
    assert metadata["paperswithcode_id"] == "hand-added-id"
    entries = parse_changelog(card)
    assert list(entries) == ["1.1.0", "1.0.0", "0.9.0"]
    assert "Previous release: recipe v1.0.0" in entries["1.1.0"]
    assert entries["0.9.0"] == "- An earlier release, described by hand."
    assert 'revision="v1.1.0"' in card  # the loading snippet names this release
    built = json.loads((out / "build.json").read_text())
    assert built["recipe"]["version"] == "1.1.0"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_reports_timings_and_draws_progress(
    kind: str,
    build_kind: Callable[..., BuildResult],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = build_kind(kind, tmp_path / "out", progress=True)
    assert {"validate", "stage"} <= set(result.timings)
    assert len(result.timings) >= 4 and all(s >= 0 for s in result.timings.values())
    name = json.loads((result.out / "build.json").read_text())["recipe"]["name"]
    assert f"build {name}" in capsys.readouterr().err


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_validation_writes_nothing(
    kind: str,
    build_kind: Callable[..., BuildResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kind's own validator runs before anything reaches `out`: with it reporting a
    violation, the build stops with ValidationFailed and leaves no folder and no temp tree."""
    broken = Violation("cfg/test-00000-of-00001.parquet", 0, "x/1", "planted_rule", "planted")
    module, name = VALIDATORS[kind]
    monkeypatch.setattr(module, name, lambda *_a, **_k: ValidationReport(violations=[broken]))
    out = tmp_path / "out"
    with pytest.raises(ValidationFailed, match="planted_rule"):
        build_kind(kind, out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


@pytest.mark.parametrize("kind", ["na", "selfknow"])
def test_a_failed_rebuild_leaves_the_previous_build_as_it_was(
    kind: str,
    build_kind: Callable[..., BuildResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "out"
    build_kind(kind, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    broken = Violation("cfg/test-00000-of-00001.parquet", 0, "x/1", "planted_rule", "planted")
    module, name = VALIDATORS[kind]
    monkeypatch.setattr(module, name, lambda *_a, **_k: ValidationReport(violations=[broken]))
    with pytest.raises(ValidationFailed, match="planted_rule"):
        build_kind(kind, out, "1.1.0")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_another_recipes_card_is_not_carried_over(
    build_kind: Callable[..., BuildResult], tmp_path: Path
) -> None:
    """A build into a folder that holds another recipe's build replaces it whole: that
    dataset's hand-added metadata, licence, tags and changelog are not this one's."""
    out = tmp_path / "out"
    build_kind("na", out)
    hand_edit(out / "README.md")
    build_kind("selfknow", out)
    card = (out / "README.md").read_text(encoding="utf-8")
    metadata, _ = split_front_matter(card)
    assert "paperswithcode_id" not in metadata
    assert "arc" not in " ".join(map(str, metadata.get("tags", []))).lower()
    assert "ARC" not in str(metadata.get("source_datasets"))
    assert list(parse_changelog(card)) == ["1.0.0"]


@pytest.mark.parametrize("kind", KINDS)
def test_what_a_maintainer_adds_that_the_kind_never_writes_survives_a_rebuild(
    kind: str, build_kind: Callable[..., BuildResult], tmp_path: Path
) -> None:
    """Keys and tags nabench writes for some kind, but not this one, set by hand on this
    card (a licence on a selfknow card without `publish.license`, `task_ids`, another
    kind's tags, a source's name) are the maintainer's: a rebuild keeps them."""
    out = tmp_path / "out"
    build_kind(kind, out)
    metadata, body = split_front_matter((out / "README.md").read_text(encoding="utf-8"))
    hand = {"license": "cc-by-sa-4.0", "task_ids": ["hand-task"], "source_datasets": ["x/y"]}
    added = {k: v for k, v in hand.items() if k not in metadata}
    tags = [t for t in ("synthetic", "trl", "memorization", "gpqa") if t not in metadata["tags"]]
    metadata = {**metadata, **added, "tags": [*metadata["tags"], *tags]}
    (out / "README.md").write_text(with_front_matter(metadata, body), encoding="utf-8")
    build_kind(kind, out, "1.1.0")
    rebuilt, _ = split_front_matter((out / "README.md").read_text(encoding="utf-8"))
    assert {k: rebuilt.get(k) for k in added} == added
    assert rebuilt["tags"][-len(tags) :] == tags


def test_a_key_the_recipe_no_longer_sets_leaves_the_card(
    scripted_server: Callable[..., Scripted], tmp_path: Path
) -> None:
    """selfknow writes `license` only while the recipe sets `publish.license`: once it is
    dropped the rebuilt card has none (the old one is nabench's, not carried over), while a
    key added by hand stays."""
    url = scripted_server(responder()).url
    licensed = {**SELFKNOW, "publish": {"license": "cc-by-4.0"}}
    out = tmp_path / "out"
    options = BuildOptions(out=out, progress=False)
    run_recipe(parse_recipe(openai_model(licensed, url), "x.yaml"), options)
    hand_edit(out / "README.md")
    assert split_front_matter((out / "README.md").read_text())[0]["license"] == "cc-by-4.0"
    run_recipe(parse_recipe({**openai_model(SELFKNOW, url), "version": "1.1.0"}, "x.yaml"), options)
    metadata, _ = split_front_matter((out / "README.md").read_text(encoding="utf-8"))
    assert "license" not in metadata
    assert metadata["paperswithcode_id"] == "hand-added-id"


@pytest.mark.parametrize(
    ("damage", "says"),
    [(b"\xff\xfe not UTF-8", "not valid UTF-8"), (b"---\na: 1\na: 2\n---\nbody", "given twice")],
    ids=["not-utf8", "bad-front-matter"],
)
def test_a_previous_card_that_cannot_be_merged_stops_the_build_before_any_work(
    damage: bytes,
    says: str,
    build_kind: Callable[..., BuildResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read when the build starts, not when it commits (after a model job): a one-line
    error naming the card, and the build in `out` untouched."""
    out = tmp_path / "out"
    build_kind("na", out)
    (out / "README.md").write_bytes(damage)

    def no_load(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the build loaded its source before reading the previous card")

    monkeypatch.setattr(na, "load_split", no_load)
    with pytest.raises(NabenchError, match=says) as failed:
        build_kind("na", out, "1.1.0")
    assert str(out / "README.md") in str(failed.value) and "\n" not in str(failed.value)
    assert (out / "README.md").read_bytes() == damage


@pytest.mark.parametrize("kind", ["selfknow", "na-train"])
def test_model_kinds_write_their_stats_beside_the_build(
    kind: str, build_kind: Callable[..., BuildResult], tmp_path: Path
) -> None:
    """The after-commit hook writes `<out>.stats.json` (the model job's calls); selfknow's
    report/ folder is part of the tree, hashed into build.json like the tables."""
    out = tmp_path / "out"
    build_kind(kind, out)
    stats = json.loads((tmp_path / "out.stats.json").read_text())
    assert stats["total"] > 0 and stats["calls"] + stats["cache_hits"] >= stats["total"]
    files = json.loads((out / "build.json").read_text())["files"]
    report = {"report/report.md", "report/metrics.json"}
    assert (report <= set(files)) == (kind == "selfknow")


@pytest.mark.parametrize(
    ("recipe", "says"),
    [("mmlu-na-train", "na-train takes --limit"), ("selfknow", "selfknow build takes --limit")],
)
def test_sample_is_refused_where_it_is_not_defined(
    recipe: str, says: str, mmlu_dir: Path, tmp_path: Path
) -> None:
    """A model-generated build has no seeded sample of source items: `--sample` is a one-line
    error before anything runs, not ignored (na-train ignored it)."""
    from click.testing import CliRunner

    from nabench.cli import main

    out = tmp_path / "out"
    args = ["build", recipe, "--source", str(mmlu_dir), "--sample", "5", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--quiet", "--labels", "none"])
    assert result.exit_code != 0
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and says in errors[0], result.output
    assert "Traceback" not in result.output and not out.exists()
