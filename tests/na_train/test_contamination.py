"""Decontamination against MMLU test on real data: the validation split shares 37 questions
with test verbatim and one more after whitespace normalisation (item 1394 has a double space
where test has one). Those items are excluded before sampling with reason `in_eval_split`."""

from __future__ import annotations

from pathlib import Path

import pytest
from na_train_steps import prepare

from nabench.audit.contamination import EvalIndex, normalise_question
from nabench.core.errors import RecipeError
from nabench.pipelines.na_train import eval_index
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.sources import get_source


def test_normalisation_collapses_whitespace_and_case() -> None:
    assert normalise_question("  Which\tof the\n\nFOLLOWING  is true? ") == (
        "which of the following is true?"
    )
    index = EvalIndex.from_questions(["Which of the following is true?"], "here")
    assert index.match("Which of the following is true?") == "exact"
    assert index.match("which  of the following IS true?") == "normalised"
    assert index.match("Which of the following is false?") is None


@pytest.fixture(scope="module")
def prepared(mmlu_dir: Path):  # type: ignore[no-untyped-def]
    recipe = load_recipe("mmlu-na-train", ["labels.mode=none"])
    options = BuildOptions(source=str(mmlu_dir), splits=["validation"])
    source = get_source("mmlu")
    return prepare(recipe, options, source, eval_index(source, recipe, options), recipe.seed)


def test_validation_items_in_test_are_excluded_with_a_reason(prepared) -> None:  # type: ignore[no-untyped-def]
    assert prepared.contamination == {"checked": 1531, "exact": 37, "normalised_only": 1}
    excluded = prepared.excluded.to_pylist()
    in_eval = {r["id"] for r in excluded if r["reason"] == "in_eval_split"}
    assert len(in_eval) == 38
    assert {"mmlu/all/validation/00052", "mmlu/all/validation/01394"} <= in_eval
    sampled = {i for table in prepared.variants for i in table.column("id").to_pylist()}
    assert not in_eval & sampled
    assert "mmlu/all/validation/00000" in sampled


def test_a_training_split_that_is_the_eval_split_is_refused() -> None:
    with pytest.raises(RecipeError, match="decontamination split is also a training split"):
        load_recipe("mmlu-na-train", ["source.splits=[test]"])
