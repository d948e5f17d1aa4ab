"""The artifact validator: clean tables pass, each broken invariant is reported by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nabench.perturb.artifacts import (
    PROMPT_TYPES,
    build_prompt_tables,
    replace_test_question,
)
from nabench.sources._base import item_table
from nabench.validate import table_kind, validate_path
from nabench.validate.artifacts import MIN_QUESTION_CHARS, check_artifacts


@pytest.fixture(scope="module")
def tables(mmlu_test: pa.Table, mmlu_dev: pa.Table) -> dict[str, pa.Table]:
    sample = mmlu_test.take([0, 1, 2, 3000, 9000])
    return build_prompt_tables(
        sample,
        mmlu_dev,
        prompt_types=list(PROMPT_TYPES),
        protocol="same_subject",
        k=5,
        seed=3,
        dataset="mmlu",
    )


@pytest.fixture(scope="module")
def pool_maps(mmlu_dev: pa.Table) -> dict[str, Any]:
    ids = mmlu_dev.column("id").to_pylist()
    return {"questions": dict(zip(ids, mmlu_dev.column("question").to_pylist(), strict=True))}


def _set(table: pa.Table, column: str, row: int, value: Any) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    field = table.schema.field(column)
    return table.set_column(
        table.schema.get_field_index(column), field, pa.array(values, field.type)
    )


def _rules(table: pa.Table, **kwargs: Any) -> set[str]:
    return {v.rule for v in check_artifacts(table, "t", **kwargs)}


def test_clean_tables_pass(tables: dict[str, pa.Table], pool_maps: dict[str, Any]) -> None:
    for name, table in tables.items():
        assert table_kind(table) == "artifact"
        assert check_artifacts(table, name) == []
        assert check_artifacts(table, name, k=5, **pool_maps) == []


def test_wrong_stop_and_target(tables: dict[str, pa.Table]) -> None:
    full = tables["full"]
    assert _rules(_set(full, "stop", 1, "\nChoices:")) == {"stop"}
    wrong = "A" if full.column("target")[2].as_py() != "A" else "B"
    violations = check_artifacts(_set(full, "target", 2, wrong), "t")
    assert [(v.rule, v.row, v.id) for v in violations] == [
        ("target", 2, full.column("id")[2].as_py())
    ]
    assert _rules(_set(tables["qi_step1"], "target", 0, "A")) == {"target"}


def test_revealed_gold_letter_is_caught(tables: dict[str, pa.Table]) -> None:
    full = tables["full"]
    gold = full.column("target")[0].as_py()
    leaked = _set(full, "prompt", 0, full.column("prompt")[0].as_py() + f" ({gold})")
    assert "gold_not_revealed" in _rules(leaked)
    prior = tables["prior_choice"]
    leaked = _set(prior, "prompt", 0, prior.column("prompt")[0].as_py() + " False")
    assert "gold_not_revealed" in _rules(leaked)


def test_question_text_in_choices_only_prompt_is_caught(tables: dict[str, pa.Table]) -> None:
    for name in ("choices_only", "prior_choice"):
        table = tables[name]
        question = table.column("question")[0].as_py().strip()
        assert len(question) >= MIN_QUESTION_CHARS
        leaked = _set(table, "prompt", 0, question + "\n\n" + table.column("prompt")[0].as_py())
        assert "no_question_text" in _rules(leaked)
        labelled = _set(table, "prompt", 0, "Question: x\n\n" + table.column("prompt")[0].as_py())
        assert "no_question_text" in _rules(labelled)


def test_fewshot_question_leak_needs_the_pool(
    tables: dict[str, pa.Table], pool_maps: dict[str, Any]
) -> None:
    table = tables["choices_only"]
    shot = table.column("fewshot_ids")[0].as_py()[1]
    question = pool_maps["questions"][shot].strip()
    assert len(question) >= MIN_QUESTION_CHARS
    prompt = table.column("prompt")[0].as_py().replace("Choices:\n", f"{question}\nChoices:\n", 2)
    leaked = _set(table, "prompt", 0, prompt)
    assert "no_question_text" in _rules(leaked, **pool_maps)


def _toy(question: str, choices: list[str], pool_choices: list[str]) -> pa.Table:
    pool = item_table(
        {
            "id": ["toy/dev/0"],
            "source": ["toy"],
            "subject": [None],
            "question": ["A few-shot question that is long enough"],
            "choices": [pool_choices],
            "answer": [0],
        }
    )
    test = item_table(
        {
            "id": ["toy/test/0"],
            "source": ["toy"],
            "subject": [None],
            "question": [question],
            "choices": [choices],
            "answer": [1],
        }
    )
    return build_prompt_tables(
        test, pool, prompt_types=["choices_only"], protocol="random", k=1, seed=0, dataset="toy"
    )["choices_only"]


def test_short_questions_and_option_fragments_are_not_leaks() -> None:
    # "Inflation" is shorter than MIN_QUESTION_CHARS: an option may contain it.
    assert (
        _rules(_toy("Inflation", ["Inflation rises", "b", "c", "d"], ["w", "x", "y", "z"])) == set()
    )
    # A (truncated) question that is a fragment of its own option, or of a few-shot option.
    fragment = "h former therapy clients."
    assert len(fragment) >= MIN_QUESTION_CHARS
    own = ["Sexual intimacies with former therapy clients.", "b", "c", "d"]
    assert _rules(_toy(fragment, own, ["w", "x", "y", "z"])) == set()
    shot = ["w", "Never with former therapy clients.", "y", "z"]
    assert _rules(_toy(fragment, ["a", "b", "c", "d"], shot)) == set()
    # ... but the same text outside any option is a leak.
    table = _toy(fragment, own, ["w", "x", "y", "z"])
    leaked = _set(table, "prompt", 0, fragment + "\n" + table.column("prompt")[0].as_py())
    assert "no_question_text" in _rules(leaked)


def test_fewshot_count_and_k(tables: dict[str, pa.Table]) -> None:
    full = tables["full"]
    shots = full.column("fewshot_ids")[0].as_py()
    assert _rules(_set(full, "fewshot_ids", 0, shots[:4])) == {"fewshot_blocks", "fewshot_k"}
    assert _rules(full, k=4) == {"fewshot_k"}
    # drop the first example from the prompt: 4 blocks, 5 ids
    prompt = full.column("prompt")[0].as_py()
    assert "fewshot_blocks" in _rules(_set(full, "prompt", 0, prompt.split("\n\n", 1)[1]))
    own = full.column("item_id")[0].as_py()
    assert "fewshot_not_self" in _rules(_set(full, "fewshot_ids", 0, [own, *shots[1:]]))


def test_mem_gold_lines_must_all_show_the_gold_text(tables: dict[str, pa.Table]) -> None:
    table = tables["mem_gold_choices"]
    prompt = table.column("prompt")[0].as_py()
    head, _, _ = prompt.rpartition("(D) ")
    broken = _set(table, "prompt", 0, head + "(D) something else\nAnswer:")
    assert {"test_example", "mem_gold_lines_equal"} <= _rules(broken)


def test_individual_prior_rows(tables: dict[str, pa.Table]) -> None:
    prior = tables["prior_choice_with_question"]
    targets = prior.column("target").to_pylist()
    row = targets.index("False")
    rules = _rules(_set(prior, "target", row, "True"))
    assert rules == {"target", "prior_one_true"}
    assert "id_format" in _rules(_set(prior, "id", 0, prior.column("item_id")[0].as_py()))
    assert "choice_index" in _rules(_set(prior, "choice_index", 0, None))
    duplicated = pa.concat_tables([prior, prior.slice(0, 1)])
    assert {v.rule for v in check_artifacts(duplicated, "t")} == {"schema:id"}


def test_step2_and_random_question_rows(tables: dict[str, pa.Table]) -> None:
    full = tables["full"]
    ids = full.column("id").to_pylist()
    step2 = replace_test_question(full, ["An inferred question?"] * len(ids), ids, "qi_step2")
    assert check_artifacts(step2, "s2") == []
    assert "inserted_question" in _rules(_set(step2, "inserted_question", 0, " "))
    donors = ids[1:] + ids[:1]
    real = full.column("question").to_pylist()
    control = replace_test_question(full, real[1:] + real[:1], donors, "qi_random_question")
    assert check_artifacts(control, "rq") == []
    assert "inserted_question" in _rules(_set(control, "inserted_from", 0, ids[0]))
    # the inserted question must be what the test example shows
    assert "test_example" in _rules(_set(control, "inserted_question", 1, "Another question?"))


def test_validate_path_reports_rows_of_an_artifact_file(
    tables: dict[str, pa.Table], tmp_path: Path
) -> None:
    good = tmp_path / "choices_only.parquet"
    pq.write_table(tables["choices_only"], good)
    assert validate_path(good).violations == []
    bad = tmp_path / "bad.parquet"
    pq.write_table(_set(tables["choices_only"], "stop", 3, "\nQuestion:"), bad)
    report = validate_path(bad)
    assert [(v.rule, v.row) for v in report.violations] == [("stop", 3)]
    assert report.rows == tables["choices_only"].num_rows
