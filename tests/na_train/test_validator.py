"""The na-train validator on real MMLU items: it passes a consistent build and rejects a dpo
row whose chosen answer is wrong and a training item copied from the test split. Responses
are scripted (no model) so that each sample set holds one right and one wrong answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pytest
from na_train_steps import prepare

from nabench.evaluation import parse_answer
from nabench.llm import Completion
from nabench.pipelines.na_train import (
    eval_index,
    sample_requests,
    samples_table,
    selection_tables,
)
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.sources import get_source
from nabench.validate.na_train import check_na_train

LETTERS = "ABCD"


@pytest.fixture(scope="module")
def setting(mmlu_dir: Path) -> tuple[Any, Any, Any]:
    recipe = load_recipe("mmlu-na-train", ["labels.mode=none", "sampler.n=2"])
    options = BuildOptions(source=str(mmlu_dir), splits=["validation"], limit=8)
    source = get_source("mmlu")
    index = eval_index(source, recipe, options)
    return recipe, options, index


def scripted_build(setting: tuple[Any, Any, Any]) -> dict[str, pa.Table]:
    recipe, options, index = setting
    prepared = prepare(recipe, options, get_source("mmlu"), index, recipe.seed)
    rows: list[dict[str, Any]] = []
    for table in prepared.variants:
        rows += sample_requests(table, recipe, recipe.seed)[0]
    comps = [  # sample 0 answers right, sample 1 names the next letter
        Completion(text=f"Step by step.\nAnswer: {LETTERS[(r['answer'] + r['sample_index']) % 4]}")
        for r in rows
    ]
    return selection_tables(recipe, samples_table(rows, comps, "scripted"))


def rules(violations: list[Any]) -> set[str]:
    return {v.rule for v in violations}


def test_consistent_build_passes(setting: tuple[Any, Any, Any]) -> None:
    tables = scripted_build(setting)
    assert tables["dpo"].num_rows == 8 * 3  # 8 items x 3 variants, one pair each
    assert tables["sft"].num_rows == 8  # the standard variant only
    assert check_na_train(tables, parse_answer, setting[2]) == []


def test_rejects_a_dpo_row_whose_chosen_is_wrong(setting: tuple[Any, Any, Any]) -> None:
    tables = scripted_build(setting)
    dpo = tables["dpo"].to_pylist()
    bad = dict(dpo[3])
    bad["chosen"], bad["rejected"] = bad["rejected"], bad["chosen"]
    bad["chosen_seed"], bad["rejected_seed"] = bad["rejected_seed"], bad["chosen_seed"]
    dpo[3] = bad
    tables["dpo"] = pa.Table.from_pylist(dpo, schema=tables["dpo"].schema)
    found = check_na_train(tables, parse_answer, setting[2])
    assert rules(found) == {"dpo_chosen_correct", "dpo_rejected_incorrect"}
    assert {(v.where, v.row, v.id) for v in found} == {
        ("dpo/train-00000-of-00001.parquet", 3, bad["id"])
    }


def test_rejects_a_wrong_chosen_text(setting: tuple[Any, Any, Any]) -> None:
    tables = scripted_build(setting)
    dpo = tables["dpo"].to_pylist()
    dpo[0]["chosen"] = [{"role": "assistant", "content": "Answer: " + dpo[0]["rejected_parsed"]}]
    tables["dpo"] = pa.Table.from_pylist(dpo, schema=tables["dpo"].schema)
    assert rules(check_na_train(tables, parse_answer, setting[2])) == {
        "dpo_chosen_correct",
        "traceable",
    }


@pytest.mark.parametrize(
    ("edit", "how"),
    [(lambda q: q, "exact"), (lambda q: "  " + q.upper().replace(" ", "\n "), "normalised")],
)
def test_rejects_an_item_copied_from_the_test_split(
    setting: tuple[Any, Any, Any], mmlu_dir: Path, edit: Any, how: str
) -> None:
    test_question = datasets.load_dataset(str(mmlu_dir), "all", split="test")[100]["question"]
    tables = scripted_build(setting)
    samples = tables["samples"].to_pylist()
    target = samples[0]["id"]
    for row in samples:
        if row["id"] == target:
            row["question"] = edit(test_question)
    tables["samples"] = pa.Table.from_pylist(samples, schema=tables["samples"].schema)
    found = [v for v in check_na_train(tables, parse_answer, setting[2]) if v.id == target]
    assert found and rules(found) == {"not_in_eval"}
    assert all(f"({how} match)" in v.message for v in found)
    # every config that holds the item is named: its samples, sft and dpo rows
    assert {v.where.split("/")[0] for v in found} == {"samples", "sft", "dpo"}


def test_rejects_a_sample_whose_correctness_is_misreported(setting: tuple[Any, Any, Any]) -> None:
    tables = scripted_build(setting)
    samples = tables["samples"].to_pylist()
    samples[1]["correct"] = not samples[1]["correct"]
    tables["samples"] = pa.Table.from_pylist(samples, schema=tables["samples"].schema)
    assert "sample_scored" in rules(check_na_train(tables, parse_answer, setting[2]))


def test_rejects_a_doubled_sample_set_and_a_wrong_gold(setting: tuple[Any, Any, Any]) -> None:
    tables = scripted_build(setting)
    samples = tables["samples"].to_pylist()
    first = (samples[0]["id"], samples[0]["variant"])
    doubled = [dict(r, seed=r["seed"] + 100) for r in samples if (r["id"], r["variant"]) == first]
    samples[5]["gold"] = "ABCD"[(samples[5]["answer"] + 1) % 4]
    tables["samples"] = pa.Table.from_pylist(samples + doubled, schema=tables["samples"].schema)
    found = check_na_train(tables, parse_answer, setting[2])
    assert {(v.rule, v.id) for v in found if v.rule == "sample_set"} == {("sample_set", first[0])}
    assert [v.row for v in found if v.rule == "sample_gold"] == [5]
