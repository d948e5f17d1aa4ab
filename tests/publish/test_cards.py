"""The dataset card: metadata, construction details from labels, merge with the previous card."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from publish_helpers import build_mmlu

from nabench.pipelines.rebuild import compare_with_rebuild
from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.publish.plan import RemoteState, make_plan
from nabench.schemas.manifest import read_manifest_file
from nabench.stage.cards import (
    finalize_card,
    parse_changelog,
    split_front_matter,
    with_front_matter,
)


def _labels_file(tmp_path: Path, mmlu_dir: Path, n: int) -> Path:
    from nabench.sources import get_source

    items = get_source("mmlu").load("test", location=str(mmlu_dir)).items.slice(0, n)
    ids = items.column("id").to_pylist()
    frame = pd.DataFrame(
        {
            "id": ids,
            "na_applicable": [i % 3 != 0 for i in range(n)],
            "model": ["SmolLM2-135M-Instruct"] * n,
            "guideline_version": ["na-1.2"] * n,
        }
    )
    path = tmp_path / "labels.parquet"
    frame.to_parquet(path)
    return path


def test_card_with_labels(tmp_path: Path, mmlu_dir: Path) -> None:
    labels = _labels_file(tmp_path, mmlu_dir, 40)
    out = tmp_path / "out"
    build_mmlu(mmlu_dir, out, labels=str(labels))
    card = (out / "README.md").read_text()
    assert "Labeler model(s): `SmolLM2-135M-Instruct`." in card
    assert "Guideline version(s): `na-1.2`." in card
    assert (
        "NA-applicability screen: **done** (file from the labels file `local:labels.parquet`)"
        in card
    )
    # the labels file's local path is published nowhere (card, build.json, lm-eval tasks)
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".parquet":
            assert str(tmp_path) not in path.read_text("utf-8"), path
    # NA-applicability per subject, computed here independently from the staged configs.
    lab = pq.read_table(out / "labels" / "test-00000-of-00001.parquet").to_pandas()
    subj = pd.concat(
        [
            pq.read_table(
                out / c / "test-00000-of-00001.parquet", columns=["id", "subject"]
            ).to_pandas()
            for c in ("original", "excluded")
        ]
    ).set_index("id")["subject"]
    lab["subject"] = lab["id"].map(subj)
    for subject, group in lab.groupby("subject"):
        n, k = len(group), int(group["na_applicable"].sum())
        assert f"| {subject} | {n} | {k} | {100 * k / n:.1f}% |" in card
    assert "`not_na_applicable`" in card  # exclusion counts by reason
    meta, _ = split_front_matter(card)
    assert "labels" in {c["config_name"] for c in meta["configs"]}
    # a labeled build is rebuilt from its own `labels` config: every row the same
    assert compare_with_rebuild(out, str(mmlu_dir)) == []


def test_rebuild_merges_previous_card(tmp_path: Path, mmlu_dir: Path) -> None:
    out = tmp_path / "out"
    build_mmlu(mmlu_dir, out, version="1.0.0", limit=20)
    readme = (out / "README.md").read_text()
    # Someone adds metadata by hand (as on the Hub): a rebuild must keep it.
    (out / "README.md").write_text(
        readme.replace(
            "license: mit\n", "license: mit\nannotations_creators:\n- expert-generated\n"
        )
    )
    build_mmlu(mmlu_dir, out, version="1.1.0", limit=30)
    card = (out / "README.md").read_text()
    meta, _ = split_front_matter(card)
    assert meta["annotations_creators"] == ["expert-generated"]
    entries = parse_changelog(card)
    assert list(entries) == ["1.1.0", "1.0.0"]
    assert "First release." in entries["1.0.0"]
    assert "Previous release: recipe v1.0.0" in entries["1.1.0"]
    assert 'revision="v1.1.0"' in card


def test_finalize_is_idempotent(staged_v1: Path) -> None:
    readme = (staged_v1 / "README.md").read_text()
    manifest = read_manifest_file(staged_v1 / "build.json")
    once = finalize_card(readme, version="1.2.0", repo_id="a/b", manifest=manifest)
    twice = finalize_card(once, version="1.2.0", repo_id="a/b", manifest=manifest)
    assert once == twice
    # the build's own 1.0.0 entry is no release: published as 1.2.0, this is the first
    assert list(parse_changelog(once)) == ["1.2.0"]
    assert "First release." in parse_changelog(once)["1.2.0"]
    assert 'load_dataset("a/b", "na_keyed", split="test", revision="v1.2.0")' in once


def test_card_yaml_is_datasetcarddata_yaml(staged_v1: Path) -> None:
    """libyaml emits exactly the text `DatasetCardData.to_yaml()` would, unicode included."""
    from huggingface_hub import DatasetCardData

    from nabench.stage.cards import card_yaml

    meta, _ = split_front_matter((staged_v1 / "README.md").read_text())
    assert meta["dataset_info"] and meta["configs"]
    meta["pretty_name"] = "Ünïcode 日本語 — “quotes”: yes"
    meta["tags"] = [*meta["tags"], "a: colon", "- dash", "123", "null"]
    expected = DatasetCardData(**meta).to_yaml()
    assert card_yaml(meta) == expected
    assert (
        split_front_matter(f"---\n{card_yaml(meta)}\n---\nbody")[0]["pretty_name"]
        == (meta["pretty_name"])
    )


def test_card_cites_the_studies_of_its_variants_once(staged_v1: Path) -> None:
    from nabench.perturb import BUILDERS
    from nabench.stage.cards.context import variant_citations

    card = (staged_v1 / "README.md").read_text()
    assert card.count("@inproceedings{tam2025none,") == 1
    assert card.count("@article{kadavath2022language,") == 1
    cited = variant_citations(BUILDERS["all_of_the_above"].cites)
    assert [c["key"] for c in cited] == ["tam2025none"]
    assert variant_citations(BUILDERS["original"].cites) == []
    with pytest.raises(KeyError, match="no reference"):  # a typo is not a silent omission
        variant_citations(["tam2025nonee"])


def _alias_bomb(levels: int = 9) -> str:
    """Front matter whose aliases expand to 10**levels values (a few hundred bytes)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "---\n" + "\n".join(lines) + "\nlicense: mit\n---\nSomeone's card.\n"


def test_an_alias_bomb_in_the_previous_card_is_refused(staged_v1: Path) -> None:
    """The target's previous card is merged into the new one: its alias bomb was carried into
    the release (as `&id001` anchors, 10**9 values for whatever expands them)."""
    import pytest

    from nabench.core.errors import NabenchError
    from nabench.publish.plan import RemoteState, make_plan

    bomb = _alias_bomb()
    assert len(bomb) < 600
    with pytest.raises(NabenchError, match=r"^the target's previous card front matter: more "):
        make_plan(staged_v1, "a/b", remote=RemoteState(readme=bomb))
    # a previous card that is merely odd is still merged (its own keys kept)
    readme = (staged_v1 / "README.md").read_text()
    manifest = read_manifest_file(staged_v1 / "build.json")
    previous = "---\npaperswithcode_id: &p mmlu-na\nother: *p\n---\nold body\n"
    card = finalize_card(readme, version="1.1.0", repo_id="a/b", manifest=manifest,
                         previous_readme=previous)  # fmt: skip
    meta, _ = split_front_matter(card)
    assert meta["paperswithcode_id"] == meta["other"] == "mmlu-na"


def build_arc(arc_dir: Path, out: Path, version: str, limit: int, *sets: str) -> BuildResult:
    """arc-na from the real ARC rows as `version`, the first `limit` items, `--set` overrides."""
    recipe = load_recipe("arc-na", [f"version={version}", *sets])
    options = BuildOptions(source=str(arc_dir), out=out, labels="none", limit=limit, progress=False)
    return run_recipe(recipe, options)


TWO_VARIANTS = "variants=[{kind: original}, {kind: na_keyed, na_texts: [None of the above]}]"


def test_a_rebuild_of_the_same_version_rewrites_its_changelog_entry(
    tmp_path: Path, arc_dir: Path
) -> None:
    """1.0.0 (12 rows), 1.1.0 (30 rows, three configs dropped), 1.1.0 again (50 rows, all
    configs): the 1.1.0 entry describes the last build, not the one it replaced; 1.0.0's
    counts are gone with its build.json, so no "from" figure and no config diff is given."""
    out = tmp_path / "out"
    build_arc(arc_dir, out, "1.0.0", 12)
    build_arc(arc_dir, out, "1.1.0", 30, TWO_VARIANTS)
    first = parse_changelog((out / "README.md").read_text())["1.1.0"]
    assert "- `original/test`: 12 → 30 rows." in first  # a different version: compared
    assert "Configs removed: `na_distractor`, `na_mixed`, `all_of_the_above`." in first
    build_arc(arc_dir, out, "1.1.0", 50)
    card = (out / "README.md").read_text()
    entries = parse_changelog(card)
    assert list(entries) == ["1.1.0", "1.0.0"]
    assert "First release." in entries["1.0.0"]
    entry = entries["1.1.0"]
    counts = read_manifest_file(out / "build.json").counts
    assert counts["original"]["test"] == 50
    for config, splits in counts.items():
        for split, n in splits.items():
            assert f"- `{config}/{split}`: {n} rows." in entry
    assert "→" not in entry and "Configs" not in entry and "12 rows" not in entry
    assert "not compared with the previous release" in entry


def test_an_identical_rebuild_of_a_version_keeps_its_compared_entry(
    tmp_path: Path, arc_dir: Path
) -> None:
    """1.0.0 (12 rows), 1.1.0 (30), 1.1.0 again with the same facts: the entry that compared
    with 1.0.0 stands (it lost its comparison and said "not compared")."""
    out = tmp_path / "out"
    build_arc(arc_dir, out, "1.0.0", 12)
    build_arc(arc_dir, out, "1.1.0", 30)
    compared = parse_changelog((out / "README.md").read_text())["1.1.0"]
    assert "- `original/test`: 12 → 30 rows." in compared
    build_arc(arc_dir, out, "1.1.0", 30)
    assert parse_changelog((out / "README.md").read_text())["1.1.0"] == compared


def test_publishing_rewrites_the_entry_against_the_targets_release(
    tmp_path: Path, arc_dir: Path
) -> None:
    """A build of 1.1.0 made over a local 1.0.0 (12 rows) published where 1.0.0 has 20:
    the entry compares with the target's build.json when it has one, and otherwise gives
    this build's counts, never the local folder's "12 → 30"."""
    build_arc(arc_dir, tmp_path / "remote", "1.0.0", 20)
    remote_card = (tmp_path / "remote" / "README.md").read_text()
    remote_manifest = read_manifest_file(tmp_path / "remote" / "build.json")
    staged = tmp_path / "staged"
    build_arc(arc_dir, staged, "1.0.0", 12)
    build_arc(arc_dir, staged, "1.1.0", 30)
    assert "12 → 30" in parse_changelog((staged / "README.md").read_text())["1.1.0"]

    def published(remote: RemoteState) -> str:
        plan = make_plan(staged, "org/arc-na", remote=remote)
        card = next(f for f in plan.adds if f.path == "README.md").content.decode()
        return parse_changelog(card)["1.1.0"]

    files = ("README.md", "build.json")
    known = published(RemoteState("a" * 40, files, readme=remote_card, manifest=remote_manifest))
    assert "- `original/test`: 20 → 30 rows." in known
    unknown = published(RemoteState("a" * 40, files[:1], readme=remote_card))
    assert "→" not in unknown and "12 rows" not in unknown and "First release." not in unknown
    assert "- `original/test`: 30 rows." in unknown


def test_publishing_under_another_version_keeps_the_targets_history(
    tmp_path: Path, arc_dir: Path
) -> None:
    """A build of recipe 1.1.0 published with --version 1.3.0 where the target holds 1.0.0
    (20 rows) and 1.1.0 (30 rows): the card's 1.1.0 entry was the build's own ("First
    release.", 12 rows), replacing the target's; and to an empty target, a 1.0.0 entry was
    kept although no 1.0.0 was ever released there."""
    files = ("README.md", "build.json")

    def release(staged: Path, version: str, remote: RemoteState) -> RemoteState:
        plan = make_plan(staged, "org/arc-na", version=version, remote=remote)
        card = next(f for f in plan.adds if f.path == "README.md").content.decode()
        manifest = read_manifest_file(staged / "build.json")
        return RemoteState("a" * 40, files, frozenset({f"v{version}"}), card, manifest)

    first = release(build_arc(arc_dir, tmp_path / "a", "1.0.0", 20).out, "1.0.0", RemoteState())
    second = release(build_arc(arc_dir, tmp_path / "b", "1.1.0", 30).out, "1.1.0", first)
    history = parse_changelog(second.readme)
    assert "- `original/test`: 20 → 30 rows." in history["1.1.0"]
    staged = build_arc(arc_dir, tmp_path / "c", "1.1.0", 12).out
    third = parse_changelog(release(staged, "1.3.0", second).readme)
    assert list(third) == ["1.3.0", "1.1.0", "1.0.0"]
    assert third["1.1.0"] == history["1.1.0"] and third["1.0.0"] == history["1.0.0"]
    assert "- `original/test`: 30 → 12 rows." in third["1.3.0"]
    alone = parse_changelog(release(staged, "2.0.0", RemoteState()).readme)
    assert list(alone) == ["2.0.0"] and "First release." in alone["2.0.0"]


def test_nabench_tags_are_regenerated_and_hand_added_ones_kept(
    tmp_path: Path, arc_dir: Path, mmlu_dir: Path
) -> None:
    """A recipe whose source changes: the old source's tag is nabench's, and goes; a tag
    and a key a maintainer added by hand stay."""
    out = tmp_path / "out"
    build_arc(arc_dir, out, "1.0.0", 12)
    metadata, body = split_front_matter((out / "README.md").read_text())
    assert "arc_challenge" in metadata["tags"]
    metadata["tags"].append("hand-added-tag")
    metadata["paperswithcode_id"] = "hand-added-id"
    (out / "README.md").write_text(with_front_matter(metadata, body))
    mmlu = "source={dataset: mmlu, hub_id: cais/mmlu, config: all, splits: [test]}"
    recipe = load_recipe("arc-na", ["version=1.1.0", mmlu])
    run_recipe(
        recipe,
        BuildOptions(source=str(mmlu_dir), out=out, labels="none", limit=12, progress=False),
    )
    metadata, _ = split_front_matter((out / "README.md").read_text())
    assert metadata["tags"] == [
        "nabench", "none-of-the-above", "perturbation", "mmlu", "hand-added-tag"
    ]  # fmt: skip
    assert metadata["paperswithcode_id"] == "hand-added-id"
    assert metadata["source_datasets"] == ["cais/mmlu"]
