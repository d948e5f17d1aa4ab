"""Golden tests of every prompt type: real MMLU / ARC items against an independent, plain
f-string rendering of the specified layouts, and invented items against literal strings."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from nabench.perturb.artifacts import PROMPT_TYPES, build_prompt_tables
from nabench.sources._base import item_table

L = "ABCD"
SEED = 7


# --- an independent reference rendering of the layouts --------------------------------------
def ref_block(choices: list[str]) -> str:
    return "\n".join(f"({L[i]}) {c.strip()}" for i, c in enumerate(choices)) + "\n"


def ref_example(kind: str, item: dict[str, Any], test: bool) -> str:
    q, ch, a = item["question"].strip(), item["choices"], item["answer"]
    ans = "Answer:" if test else f"Answer: ({L[a]})"
    if kind == "full":
        return f"Question: {q}\nChoices:\n{ref_block(ch)}{ans}"
    if kind == "choices_only":
        return f"Choices:\n{ref_block(ch)}{ans}"
    if kind == "mem_no_choices":
        return f"Question: {q}\n{ans}"
    if kind == "mem_gold_choices":
        return f"Question: {q}\nChoices:\n{ref_block([ch[a]] * len(ch))}{ans}"
    if kind == "mem_empty_choices":
        lines = "".join(f"({x}) \n" for x in L[: len(ch)])
        return f"Question: {q}\nChoices:\n{lines}{ans}"
    if kind == "qi_step1":
        end = "Question:" if test else f"Question: {q}\nAnswer: ({L[a]})"
        return f"Choices:\n{ref_block(ch)}{end}"
    raise KeyError(kind)


def ref_prior(item: dict[str, Any], choice: int, with_q: bool, gold: bool | None) -> str:
    head = f"Question: {item['question'].strip()}\n" if with_q else ""
    tail = "Answer:" if gold is None else f"Answer: {gold}"
    return f"{head}Choice: {item['choices'][choice].strip()}\n{tail}"


STOPS = {
    "full": "\nQuestion:",
    "choices_only": "\nChoices:",
    "mem_no_choices": "\nQuestion:",
    "mem_gold_choices": "\nQuestion:",
    "mem_empty_choices": "\nQuestion:",
    "prior_choice": "\nChoice:",
    "prior_choice_with_question": "\nQuestion:",
    "qi_step1": "\nChoices:",
}
LETTER_TYPES = ["full", "choices_only", "mem_no_choices", "mem_gold_choices", "mem_empty_choices"]


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


@pytest.fixture(scope="module")
def mmlu_sample(mmlu_test: pa.Table) -> pa.Table:
    """A handful of real test items from different subjects."""
    return mmlu_test.take([0, 1, 2500, 7000, 11111, 14041])


@pytest.fixture(scope="module")
def mmlu_tables(mmlu_sample: pa.Table, mmlu_dev: pa.Table) -> dict[str, pa.Table]:
    return build_prompt_tables(
        mmlu_sample,
        mmlu_dev,
        prompt_types=list(PROMPT_TYPES),
        protocol="same_subject",
        k=5,
        seed=SEED,
        dataset="mmlu",
    )


def _dev_of(mmlu_dev: pa.Table, subject: str) -> list[dict[str, Any]]:
    return [r for r in mmlu_dev.to_pylist() if r["subject"] == subject]


@pytest.mark.parametrize("kind", [*LETTER_TYPES, "qi_step1"])
def test_mmlu_prompts_match_reference(
    kind: str, mmlu_tables: dict[str, pa.Table], mmlu_sample: pa.Table, mmlu_dev: pa.Table
) -> None:
    rows = _rows(mmlu_tables[kind])
    items = mmlu_sample.to_pylist()
    assert [r["id"] for r in rows] == [i["id"] for i in items]
    for row, item in zip(rows, items, strict=True):
        shots = _dev_of(mmlu_dev, item["subject"])
        assert len(shots) == 5
        expected = "\n\n".join(
            [*(ref_example(kind, s, test=False) for s in shots), ref_example(kind, item, True)]
        )
        assert row["prompt"] == expected
        assert row["fewshot_ids"] == [s["id"] for s in shots]
        assert row["stop"] == STOPS[kind]
        assert row["target"] == (None if kind == "qi_step1" else L[item["answer"]])
        assert row["choice_index"] is None
        assert row["item_id"] == item["id"]
        for field in ("source", "subject", "question", "choices", "answer"):
            assert row[field] == item[field]
        assert row["seed"] == SEED


@pytest.mark.parametrize("kind", ["prior_choice", "prior_choice_with_question"])
def test_mmlu_individual_prior_matches_reference(
    kind: str, mmlu_tables: dict[str, pa.Table], mmlu_sample: pa.Table, mmlu_dev: pa.Table
) -> None:
    with_q = kind.endswith("with_question")
    rows = _rows(mmlu_tables[kind])
    items = mmlu_sample.to_pylist()
    assert len(rows) == 4 * len(items)
    dev = {r["id"]: r for r in mmlu_dev.to_pylist()}
    for n, row in enumerate(rows):
        item, choice = items[n // 4], n % 4
        assert row["id"] == f"{item['id']}#{choice}"
        assert row["item_id"] == item["id"]
        assert row["choice_index"] == choice
        assert row["target"] == str(choice == item["answer"])
        shots = [(dev[f.split("#")[0]], int(f.split("#")[1])) for f in row["fewshot_ids"]]
        assert [s["id"] for s, _ in shots] == [s["id"] for s in _dev_of(mmlu_dev, item["subject"])]
        golds = [c == s["answer"] for s, c in shots]
        assert sum(golds) == 2  # k // 2 True examples, the rest False
        expected = "\n\n".join(
            [
                *(ref_prior(s, c, with_q, g) for (s, c), g in zip(shots, golds, strict=True)),
                ref_prior(item, choice, with_q, None),
            ]
        )
        assert row["prompt"] == expected
        assert row["stop"] == STOPS[kind]


def test_prior_fewshot_draw_follows_the_documented_seeding(
    mmlu_tables: dict[str, pa.Table], mmlu_sample: pa.Table, mmlu_dev: pa.Table
) -> None:
    """Balanced labels shuffled, then a distractor per False example, from one RNG seeded
    by the string f"{seed}:prior_fewshot:{dataset}/{subject}"."""
    row = _rows(mmlu_tables["prior_choice"])[0]
    subject = mmlu_sample.to_pylist()[0]["subject"]
    shots = _dev_of(mmlu_dev, subject)
    rng = random.Random(f"{SEED}:prior_fewshot:mmlu/{subject}")
    labels = [True] * 2 + [False] * 3
    rng.shuffle(labels)
    expected = []
    for s, gold in zip(shots, labels, strict=True):
        if gold:
            expected.append(f"{s['id']}#{s['answer']}")
        else:
            texts = [c.strip() for c in s["choices"]]
            wrong = [c for c in range(4) if texts[c] != texts[s["answer"]]]
            expected.append(f"{s['id']}#{rng.choice(wrong)}")
    assert row["fewshot_ids"] == expected


def test_arc_prompts_match_reference(arc_test: pa.Table, arc_train: pa.Table) -> None:
    sample = arc_test.take([0, 1, 2, 500])
    pool = arc_train.filter(
        pa.array([len(c) == 4 for c in arc_train.column("choices").to_pylist()])
    )
    tables = build_prompt_tables(
        sample,
        pool,
        prompt_types=["full", "choices_only", "mem_gold_choices"],
        protocol="random",
        k=25,
        seed=SEED,
        dataset="arc_challenge",
    )
    by_id = {r["id"]: r for r in pool.to_pylist()}
    for kind, table in tables.items():
        rows = _rows(table)
        first = rows[0]["fewshot_ids"]
        assert len(first) == 25 == len(set(first))
        for row, item in zip(rows, sample.to_pylist(), strict=True):
            assert row["fewshot_ids"] == first  # ARC has no subjects: one draw for all items
            shots = [by_id[f] for f in row["fewshot_ids"]]
            expected = "\n\n".join(
                [*(ref_example(kind, s, False) for s in shots), ref_example(kind, item, True)]
            )
            assert row["prompt"] == expected


# --- invented items, literal expected strings -------------------------------------------------
def _invented() -> tuple[pa.Table, pa.Table]:
    pool = item_table(
        {
            "id": ["toy/dev/0", "toy/dev/1"],
            "source": ["toy", "toy"],
            "subject": ["s", "s"],
            "question": ["What is 1+1? ", "Sky colour?"],
            "choices": [["1", "2", "3", "4"], ["red", "blue", " green", "pink"]],
            "answer": [1, 1],
        }
    )
    test = item_table(
        {
            "id": ["toy/test/0"],
            "source": ["toy"],
            "subject": ["s"],
            "question": ["Capital of France?\n"],
            "choices": [["Paris", "Rome", "Oslo", "Bern"]],
            "answer": [0],
        }
    )
    return test, pool


SHOT0 = "Question: What is 1+1?\nChoices:\n(A) 1\n(B) 2\n(C) 3\n(D) 4\nAnswer: (B)"
SHOT1 = "Question: Sky colour?\nChoices:\n(A) red\n(B) blue\n(C) green\n(D) pink\nAnswer: (B)"
TEST = "Question: Capital of France?\nChoices:\n(A) Paris\n(B) Rome\n(C) Oslo\n(D) Bern\nAnswer:"
GOLDEN = {
    "full": f"{SHOT0}\n\n{SHOT1}\n\n{TEST}",
    "choices_only": (
        "Choices:\n(A) 1\n(B) 2\n(C) 3\n(D) 4\nAnswer: (B)\n\n"
        "Choices:\n(A) red\n(B) blue\n(C) green\n(D) pink\nAnswer: (B)\n\n"
        "Choices:\n(A) Paris\n(B) Rome\n(C) Oslo\n(D) Bern\nAnswer:"
    ),
    "mem_no_choices": (
        "Question: What is 1+1?\nAnswer: (B)\n\nQuestion: Sky colour?\nAnswer: (B)\n\n"
        "Question: Capital of France?\nAnswer:"
    ),
    "mem_gold_choices": (
        "Question: What is 1+1?\nChoices:\n(A) 2\n(B) 2\n(C) 2\n(D) 2\nAnswer: (B)\n\n"
        "Question: Sky colour?\nChoices:\n(A) blue\n(B) blue\n(C) blue\n(D) blue\nAnswer: (B)\n\n"
        "Question: Capital of France?\nChoices:\n(A) Paris\n(B) Paris\n(C) Paris\n(D) Paris\n"
        "Answer:"
    ),
    "mem_empty_choices": (
        "Question: What is 1+1?\nChoices:\n(A) \n(B) \n(C) \n(D) \nAnswer: (B)\n\n"
        "Question: Sky colour?\nChoices:\n(A) \n(B) \n(C) \n(D) \nAnswer: (B)\n\n"
        "Question: Capital of France?\nChoices:\n(A) \n(B) \n(C) \n(D) \nAnswer:"
    ),
    "qi_step1": (
        "Choices:\n(A) 1\n(B) 2\n(C) 3\n(D) 4\nQuestion: What is 1+1?\nAnswer: (B)\n\n"
        "Choices:\n(A) red\n(B) blue\n(C) green\n(D) pink\nQuestion: Sky colour?\nAnswer: (B)\n\n"
        "Choices:\n(A) Paris\n(B) Rome\n(C) Oslo\n(D) Bern\nQuestion:"
    ),
}


@pytest.mark.parametrize("kind", sorted(GOLDEN))
def test_invented_items_golden(kind: str) -> None:
    test, pool = _invented()
    table = build_prompt_tables(
        test, pool, prompt_types=[kind], protocol="same_subject", k=2, seed=0, dataset="toy"
    )[kind]
    assert table.column("prompt").to_pylist() == [GOLDEN[kind]]
    assert not GOLDEN[kind].endswith(" ")


def test_invented_items_individual_prior_golden() -> None:
    test, pool = _invented()
    tables = build_prompt_tables(
        test,
        pool,
        prompt_types=["prior_choice", "prior_choice_with_question"],
        protocol="same_subject",
        k=2,
        seed=0,
        dataset="toy",
    )
    plain = tables["prior_choice"].to_pylist()
    # Random("0:prior_fewshot:toy/s"): labels [True, False] shuffle to [False, True], then
    # the False example's distractor is choice([0, 2, 3]) == 0.
    assert plain[0]["fewshot_ids"] == ["toy/dev/0#0", "toy/dev/1#1"]
    assert [r["prompt"] for r in plain] == [
        f"Choice: 1\nAnswer: False\n\nChoice: blue\nAnswer: True\n\nChoice: {c}\nAnswer:"
        for c in ("Paris", "Rome", "Oslo", "Bern")
    ]
    assert [r["target"] for r in plain] == ["True", "False", "False", "False"]
    assert [r["id"] for r in plain] == [f"toy/test/0#{i}" for i in range(4)]
    with_q = tables["prior_choice_with_question"].column("prompt").to_pylist()
    assert with_q[1] == (
        "Question: What is 1+1?\nChoice: 1\nAnswer: False\n\n"
        "Question: Sky colour?\nChoice: blue\nAnswer: True\n\n"
        "Question: Capital of France?\nChoice: Rome\nAnswer:"
    )


def test_zero_shot_prompt_is_the_test_example_alone() -> None:
    test, pool = _invented()
    table = build_prompt_tables(
        test, pool, prompt_types=["full"], protocol="random", k=0, seed=0, dataset="toy"
    )["full"]
    assert table.column("prompt").to_pylist() == [TEST]
    assert table.column("fewshot_ids").to_pylist() == [[]]
