"""Few-shot protocols: which examples each item gets, seeded and stable."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from nabench.core.errors import NabenchError, RecipeError
from nabench.perturb.artifacts import (
    Items,
    build_prompt_tables,
    draw_without_replacement,
    plan_fewshot,
)
from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.registry import load_recipe, parse_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.sources import get_source
from nabench.validate import validate_path


def test_mmlu_every_subject_gets_its_five_dev_examples_in_order(
    mmlu_test: pa.Table, mmlu_dev: pa.Table
) -> None:
    test, pool = Items.from_table(mmlu_test), Items.from_table(mmlu_dev)
    plan = plan_fewshot(test, pool, protocol="same_subject", k=5, seed=1, dataset="mmlu")
    assert len(plan.keys) == 57
    for key, rows in zip(plan.keys, plan.rows, strict=True):
        expected = [i for i, s in enumerate(pool.subject) if s == key]
        assert rows == expected and len(rows) == 5
    for i in (0, 5000, 14041):
        assert plan.keys[plan.group[i]] == test.subject[i]


def test_same_subject_needs_k_examples(mmlu_test: pa.Table, mmlu_dev: pa.Table) -> None:
    test, pool = Items.from_table(mmlu_test.slice(0, 3)), Items.from_table(mmlu_dev)
    with pytest.raises(NabenchError, match=r"5 usable item.*6 needed"):
        plan_fewshot(test, pool, protocol="same_subject", k=6, seed=1, dataset="mmlu")


def test_draw_is_distinct_and_a_smaller_k_is_a_prefix() -> None:
    for seed in range(50):
        big = draw_without_replacement(random.Random(seed), 1119, 25)
        small = draw_without_replacement(random.Random(seed), 1119, 20)
        assert len(set(big)) == 25 and all(0 <= i < 1119 for i in big)
        assert small == big[:20]
    assert sorted(draw_without_replacement(random.Random(0), 5, 5)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        draw_without_replacement(random.Random(0), 3, 4)


def test_arc_twenty_shot_examples_are_the_first_twenty_of_the_25_shot(
    arc_test: pa.Table, arc_train: pa.Table
) -> None:
    test, pool = Items.from_table(arc_test), Items.from_table(arc_train)
    k25 = plan_fewshot(test, pool, protocol="random", k=25, seed=3, dataset="arc_challenge")
    k20 = plan_fewshot(test, pool, protocol="random", k=20, seed=3, dataset="arc_challenge")
    assert k20.rows[0] == k25.rows[0][:20]
    other = plan_fewshot(test, pool, protocol="random", k=25, seed=4, dataset="arc_challenge")
    assert other.rows[0] != k25.rows[0]
    # the documented seeding: Random(f"{seed}:fewshot:{dataset}/{subject}"), subject "" for ARC
    assert k25.rows[0] == draw_without_replacement(
        random.Random("3:fewshot:arc_challenge/"), len(pool), 25
    )


def test_per_subject_draws_survive_removing_other_subjects(
    mmlu_test: pa.Table, mmlu_dev: pa.Table
) -> None:
    subjects = mmlu_test.column("subject")
    keep = pc.is_in(subjects, value_set=pa.array(["anatomy", "virology", "world_religions"]))
    kwargs = {"protocol": "random", "k": 5, "seed": 11, "dataset": "mmlu"}
    types = ["full", "prior_choice"]
    everything = build_prompt_tables(mmlu_test, mmlu_dev, prompt_types=types, **kwargs)  # type: ignore[arg-type]
    subset = build_prompt_tables(mmlu_test.filter(keep), mmlu_dev, prompt_types=types, **kwargs)  # type: ignore[arg-type]
    for name in types:
        full = everything[name]
        mask = pc.is_in(
            full.column("subject"), value_set=pa.array(["anatomy", "virology", "world_religions"])
        )
        assert full.filter(mask).equals(subset[name])
    # random draws differ between subjects (5 of 285)
    ids = {r["subject"]: tuple(r["fewshot_ids"]) for r in subset["full"].to_pylist()}
    assert len(set(ids.values())) == 3


def test_hellaswag_draws_per_activity_label(hellaswag_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "hs"
    result = build_artifacts(
        load_recipe("hellaswag-artifacts"),
        BuildOptions(source=str(hellaswag_dir), out=out, progress=False),
    )
    assert result.counts["full"]["validation"] == 10
    rows = pq.read_table(out / "full" / "validation-00000-of-00001.parquet").to_pylist()
    by_label: dict[str, set[tuple[str, ...]]] = {}
    for r in rows:
        assert len(r["fewshot_ids"]) == 10
        assert all(f.startswith("hellaswag/train/") for f in r["fewshot_ids"])
        by_label.setdefault(r["subject"], set()).add(tuple(r["fewshot_ids"]))
    assert all(len(v) == 1 for v in by_label.values())  # one draw per activity label
    assert len({next(iter(v)) for v in by_label.values()}) == len(by_label)
    report = validate_path(out)
    assert report.violations == []


def test_gpqa_pool_is_extended_minus_the_evaluated_records(gpqa_dir: Path, tmp_path: Path) -> None:
    recipe = load_recipe("gpqa-artifacts")
    diamond = recipe.model_copy(
        update={"source": recipe.source.model_copy(update={"config": "gpqa_diamond"})}
    )
    out = tmp_path / "gpqa"
    result = build_artifacts(diamond, BuildOptions(source=str(gpqa_dir), out=out, progress=False))
    evaluated = get_source("gpqa").load(
        "train", location=str(gpqa_dir), config="gpqa_diamond", seed=0
    )
    eval_records = {i.rsplit("/", 1)[1] for i in evaluated.items.column("id").to_pylist()}
    table = pq.read_table(out / "full" / "train-00000-of-00001.parquet")
    for fewshot in table.column("fewshot_ids").to_pylist():
        assert len(fewshot) == 5
        assert all(f.startswith("gpqa/gpqa_extended/") for f in fewshot)
        assert not {f.rsplit("/", 1)[1] for f in fewshot} & eval_records
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["fewshot"]["pool_rows_removed_as_evaluated"] == 5
    assert result.counts["fewshot"]["train"] == 5
    assert "gpqa_extended" in (out / "README.md").read_text()
    # gpqa_main leaves 2 extended-only fixture records: fewer than k = 5
    with pytest.raises(NabenchError, match="2 usable item"):
        build_artifacts(
            recipe, BuildOptions(source=str(gpqa_dir), out=tmp_path / "m", progress=False)
        )


def test_mmlu_pool_keeps_items_that_only_share_a_row_number(mmlu_dir: Path, tmp_path: Path) -> None:
    """`exclude_eval_records` compared ids by their last segment, a row number for MMLU: with
    `dev` evaluated, 285 `validation` pool items (row numbers 0-284) were dropped as
    "evaluated", though no validation item is. A record is the source's (`record_id`)."""
    recipe = load_recipe(
        "mmlu-artifacts",
        [
            "source.splits=[dev]",
            "fewshot.split=validation",
            "fewshot.protocol=random",
            "fewshot.k=3",
            "fewshot.exclude_eval_records=true",
        ],
    )
    out = tmp_path / "m"
    build_artifacts(recipe, BuildOptions(source=str(mmlu_dir), out=out, progress=False))
    fewshot = json.loads((out / "build.json").read_text())["fewshot"]
    assert fewshot["pool_rows_removed_as_evaluated"] == 0
    assert (
        fewshot["pool_rows_usable"] == fewshot["pool_rows_read"] - fewshot["pool_rows_ineligible"]
    )


def test_recipe_rejects_evaluating_the_fewshot_split() -> None:
    base = {
        "name": "x",
        "version": "1.0.0",
        "kind": "artifacts",
        "source": {"dataset": "mmlu", "config": "all", "splits": ["test"]},
        "fewshot": {"split": "dev", "k": 5, "protocol": "same_subject"},
    }
    assert parse_recipe(base, "ok").prompt_types[0] == "full"
    with pytest.raises(RecipeError, match="also an evaluated split"):
        parse_recipe({**base, "fewshot": {**base["fewshot"], "split": "test"}}, "bad")
    with pytest.raises(RecipeError, match="repeat"):
        parse_recipe({**base, "prompt_types": ["full", "full"]}, "bad")
    with pytest.raises(RecipeError, match="prompt_types"):
        parse_recipe({**base, "prompt_types": ["choices_only", "nope"]}, "bad")
    with pytest.raises(RecipeError, match=r"variants.*Extra inputs"):
        parse_recipe({**base, "variants": []}, "bad")
