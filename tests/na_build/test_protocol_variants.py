"""The NA study's dataset-side protocol: excluded subjects, the `foreign_key` ablation
control, NA placed last, and a stratified `--sample`, all on the real MMLU test split."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.pipelines.na import BuildOptions, BuildResult, build
from nabench.pipelines.registry import load_recipe, parse_recipe
from nabench.sources.sample import allocate
from nabench.validate import validate_path
from nabench.validate.invariants import check_perturbed

FILE = "test-00000-of-00001.parquet"
NA = "None of the above"


def _recipe() -> Any:
    """mmlu-na plus the two new variants (NA last, foreign key)."""
    data = load_recipe("mmlu-na").model_dump()
    data["variants"] = [
        {"kind": "original"},
        {"kind": "na_keyed", "na_texts": [NA], "position": "last"},
        {"kind": "foreign_key"},
    ]
    return parse_recipe(data, "test")


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    out = tmp_path_factory.mktemp("placed") / "mmlu-placed"
    return build(
        _recipe(), BuildOptions(source=str(mmlu_dir), out=out, labels="none", progress=False)
    )


def _rows(out: Path, config: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(out / config / FILE).to_pylist()
    return rows


def _source(mmlu_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(mmlu_dir / "all" / FILE).to_pylist()
    return rows


def test_mmlu_na_leaves_out_moral_scenarios(mmlu_na_full: BuildResult) -> None:
    recipe = load_recipe("mmlu-na")
    assert recipe.exclude_subjects == ["moral_scenarios"]
    excluded = _rows(mmlu_na_full.out, "excluded")
    moral = [r for r in excluded if r["subject"] == "moral_scenarios"]
    assert len(moral) == 895  # every moral_scenarios test item, MMLU's published size
    assert {r["reason"] for r in moral} == {"excluded_subject"}
    assert {r["reason"] for r in excluded if r["subject"] != "moral_scenarios"}.isdisjoint(
        {"excluded_subject"}
    )
    for config in ("original", "na_keyed", "all_of_the_above"):
        assert "moral_scenarios" not in {r["subject"] for r in _rows(mmlu_na_full.out, config)}


def test_unknown_excluded_subject_is_one_clear_error(mmlu_dir: Path, tmp_path: Path) -> None:
    data = load_recipe("mmlu-na").model_dump()
    data["exclude_subjects"] = ["moral_scenario"]
    recipe = tmp_path / "typo.yaml"
    recipe.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(
        main,
        ["build", str(recipe), "--source", str(mmlu_dir), "--labels", "none", "--quiet"],
    )
    assert result.exit_code != 0
    assert "exclude_subjects ['moral_scenario'] not in the source" in result.output
    assert "Traceback" not in result.output


def test_placed_build_passes_validation(placed: BuildResult) -> None:
    report = validate_path(placed.out)
    assert report.violations == []
    assert set(placed.counts) >= {"original", "na_keyed_last", "foreign_key", "excluded"}
    n = placed.counts["original"]["test"]
    assert placed.counts["na_keyed_last"]["test"] == placed.counts["foreign_key"]["test"] == n


def test_na_last_removes_gold_keeps_order_and_keys_the_last_option(
    placed: BuildResult, mmlu_dir: Path
) -> None:
    source = {f"mmlu/all/test/{i:05d}": r for i, r in enumerate(_source(mmlu_dir))}
    rows = _rows(placed.out, "na_keyed_last")
    assert len(rows) > 12000
    for row in rows:
        src = source[row["id"]]
        gold = src["answer"]
        expected = [c for i, c in enumerate(src["choices"]) if i != gold] + [NA]
        assert row["choices"] == expected
        assert row["answer"] == 3 and row["replaced_index"] == gold
    # The key always sits last, whatever the source's letter distribution.
    assert {r["answer"] for r in rows} == {3}


def test_foreign_key_borrows_another_same_subject_gold_text(
    placed: BuildResult, mmlu_dir: Path
) -> None:
    source = _source(mmlu_dir)
    golds: dict[str, set[str]] = defaultdict(set)
    for r in source:
        golds[r["subject"]].add(r["choices"][r["answer"]])
    by_id = {f"mmlu/all/test/{i:05d}": r for i, r in enumerate(source)}
    rows = _rows(placed.out, "foreign_key")
    donors_used = set()
    for row in rows:
        src = by_id[row["id"]]
        key = row["choices"][row["answer"]]
        assert row["answer"] == src["answer"] == row["replaced_index"]
        assert key == row["na_text"]
        assert key in golds[src["subject"]]
        assert key.strip().casefold() not in {c.strip().casefold() for c in src["choices"]}
        others = [c for i, c in enumerate(row["choices"]) if i != row["answer"]]
        assert others == [c for i, c in enumerate(src["choices"]) if i != src["answer"]]
        donors_used.add(key)
    # Per-item draws, not one donor for a whole subject.
    assert len(donors_used) > len(rows) // 2


def _break_and_check(rows: list[dict[str, Any]], schema: pa.Schema) -> set[str]:
    return {v.rule for v in check_perturbed(pa.Table.from_pylist(rows, schema=schema), "t")}


def test_invariants_catch_broken_foreign_key_and_last_rows(placed: BuildResult) -> None:
    schema = pq.read_schema(placed.out / "foreign_key" / FILE)
    fk = _rows(placed.out, "foreign_key")[:20]
    own = fk[0]["original_choices"][(fk[0]["answer"] + 1) % 4]
    fk[0]["choices"][fk[0]["answer"]] = own  # borrowed text is one of the item's own options
    fk[0]["na_text"] = own
    fk[1]["choices"][(fk[1]["answer"] + 1) % 4] = "something else"  # a distractor changed
    fk[2]["answer"] = (fk[2]["answer"] + 1) % 4  # key moved off the borrowed text
    rules = _break_and_check(fk, schema)
    assert {
        "foreign_key_not_own_option",
        "foreign_key_others_unchanged",
        "foreign_key_in_place",
    } <= rules

    last = _rows(placed.out, "na_keyed_last")[:20]
    last[0]["choices"][0], last[0]["choices"][1] = last[0]["choices"][1], last[0]["choices"][0]
    last[1]["choices"][1] = last[1]["original_choices"][last[1]["original_answer"]]
    last[2]["choices"] = last[2]["choices"][3:] + last[2]["choices"][:3]  # NA first
    last[2]["answer"] = 0
    rules = _break_and_check(last, schema)
    assert {
        "na_keyed_last_order_kept",
        "na_keyed_last_gold_absent",
        "na_keyed_last_key_is_last_na",
    } <= rules
    assert _break_and_check(_rows(placed.out, "na_keyed_last")[:20], schema) == set()


def test_sample_500_covers_every_subject_and_equals_the_full_rows(
    placed: BuildResult, mmlu_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sampled"
    result = CliRunner().invoke(
        main,
        [
            "build",
            str(_write_recipe(tmp_path)),
            "--source",
            str(mmlu_dir),
            "--labels",
            "none",
            "--sample",
            "500",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = _rows(out, "original")
    ids = {r["id"] for r in rows}
    assert len(ids) == 500  # N usable items, drawn among those the audit keeps
    assert _rows(out, "excluded") == []
    eligible = {r["subject"] for r in _rows(placed.out, "original")}
    assert {r["subject"] for r in rows} == eligible  # every subject the full build has
    assert {int(i.rsplit("/", 1)[1]) for i in ids} != set(range(500))  # not a prefix
    for config in ("original", "na_keyed_last", "foreign_key"):
        full = {r["id"]: r for r in _rows(placed.out, config)}
        small = _rows(out, config)
        assert small, config
        assert all(row == full[row["id"]] for row in small), config
    assert validate_path(out).violations == []


def _write_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "placed.yaml"
    path.write_text(yaml.safe_dump(_recipe().model_dump()))
    return path


def test_sample_allocation_is_proportional_with_one_per_subject() -> None:
    sizes = {"a": 1000, "b": 100, "c": 10, "d": 1}
    quota = allocate(sizes, 100)
    assert sum(quota.values()) == 100
    assert min(quota.values()) >= 1
    assert quota["a"] > quota["b"] > quota["c"]
    assert all(quota[s] <= sizes[s] for s in sizes)
    assert allocate(sizes, 2000) == sizes
    assert sum(allocate(sizes, 3).values()) == 3


def test_limit_and_sample_exclude_each_other(mmlu_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "build",
            "mmlu-na",
            "--source",
            str(mmlu_dir),
            "--labels",
            "none",
            "--limit",
            "5",
            "--sample",
            "5",
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ],
    )
    assert result.exit_code != 0
    assert "--limit and --sample exclude each other" in result.output
    assert not (tmp_path / "o").exists()
