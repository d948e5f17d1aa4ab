"""The keep rule, the SFT pick and the DPO pairing, for any sample set (hypothesis), checked
on the tables the pipeline writes and by the build's validator."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import MODERATE

from nabench.evaluation import parse_answer
from nabench.llm import ChatRequest, Completion
from nabench.perturb.training import discard_reason, dpo_pairs, first_correct, select
from nabench.pipelines.na_train import samples_table
from nabench.schemas.na_train import DISCARDED_ARROW, DPO_ARROW, SFT_ARROW
from nabench.validate.na_train import check_na_train

LETTERS = "ABCD"
VARIANTS = ("original", "na_keyed", "na_distractor")


def wrong_text(gold: str, kind: int) -> str:
    """An incorrect answer: another letter, or text the protocol's parser rejects."""
    other = LETTERS[(LETTERS.index(gold) + 1 + kind % 3) % 4]
    return f"Answer: {other}" if kind < 3 else "I cannot tell."


# one sample set of n samples: (variant, gold index, per sample: correct? and which wrong text)
def sample_set(n: int) -> st.SearchStrategy[tuple[str, int, list[tuple[bool, int]]]]:
    samples = st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=n, max_size=n)
    return st.tuples(st.sampled_from(VARIANTS), st.integers(0, 3), samples)


# a build's sets: every one holds the recipe's n samples (the validator's `sample_set` rule)
sample_sets = st.integers(1, 8).flatmap(lambda n: st.lists(sample_set(n), min_size=1, max_size=6))


def table_of(sets: list[tuple[str, int, list[tuple[bool, int]]]]) -> pa.Table:
    rows: list[dict[str, Any]] = []
    comps: list[Completion] = []
    for k, (variant, answer, samples) in enumerate(sets):
        gold = LETTERS[answer]
        for j, (right, kind) in enumerate(samples):
            rows.append(
                {
                    "id": f"synthetic/{k:03d}",
                    "source": "synthetic",
                    "subject": None,
                    "variant": variant,
                    "question": f"Question {k}?",
                    "choices": ["w", "x", "y", "z"],
                    "answer": answer,
                    "replaced_index": None,
                    "na_text": None,
                    "sample_index": j,
                    "seed": 1000 * k + j,
                    "prompt": f"prompt {k}",
                    "na_applicable": None,
                    "labeler": None,
                    "guideline_version": None,
                }
            )
            comps.append(Completion(text=f"Answer: {gold}" if right else wrong_text(gold, kind)))
    return samples_table(rows, comps, "scripted")


@MODERATE
@given(sample_sets, st.sampled_from(["zip", "product"]))
def test_training_rows_follow_the_keep_rule(sets: list[Any], pairing: str) -> None:
    table = table_of(sets)
    chosen = select(table, ["original"], list(VARIANTS), pairing)
    by_seed = {r["seed"]: r for r in table.to_pylist()}
    mixed = {}
    for k, (variant, _, samples) in enumerate(sets):
        flags = [right for right, _ in samples]
        # the paper's rule: keep a set only if it holds both a right and a wrong answer
        mixed[f"synthetic/{k:03d}"] = (variant, any(flags) and not all(flags), flags)
    assert [by_seed[s]["correct"] for s in sorted(by_seed)] == [
        right for _, _, samples in sets for right, _ in samples
    ]
    for row in chosen.dpo:
        assert mixed[row["id"]][1], "dpo row from a set that is all right or all wrong"
        assert by_seed[row["chosen_seed"]]["correct"] is True
        assert by_seed[row["rejected_seed"]]["correct"] is False
        assert row["chosen"][0]["content"] == by_seed[row["chosen_seed"]]["response"]
        assert row["rejected"][0]["content"] == by_seed[row["rejected_seed"]]["response"]
    for item_id, (variant, kept, flags) in mixed.items():
        pairs = [r for r in chosen.dpo if r["id"] == item_id]
        n_right, n_wrong = sum(flags), len(flags) - sum(flags)
        expected = min(n_right, n_wrong) if pairing == "zip" else n_right * n_wrong
        assert len(pairs) == (expected if kept else 0)
        sft = [r for r in chosen.sft if r["id"] == item_id]
        assert len(sft) == (1 if kept and variant == "original" else 0)
        if sft:
            assert sft[0]["sample_index"] == flags.index(True)
        dropped = [d for d in chosen.discarded if d["id"] == item_id]
        assert len(dropped) == (0 if kept else 1)
        if dropped:
            assert dropped[0]["reason"] == ("all_correct" if all(flags) else "all_incorrect")
    tables = {
        "samples": table,
        "sft": pa.Table.from_pylist(chosen.sft, schema=SFT_ARROW),
        "dpo": pa.Table.from_pylist(chosen.dpo, schema=DPO_ARROW),
        "discarded": pa.Table.from_pylist(chosen.discarded, schema=DISCARDED_ARROW),
    }
    assert check_na_train(tables, parse_answer, None) == []


@pytest.mark.parametrize(
    ("correct", "reason", "first", "zipped"),
    [
        ([True, False, True, False], None, 0, [(0, 1), (2, 3)]),
        ([False, False, True], None, 2, [(2, 0)]),
        ([True, True], "all_correct", 0, []),
        ([False, False, False], "all_incorrect", None, []),
    ],
)
def test_rules_on_small_sets(
    correct: list[bool], reason: str | None, first: int | None, zipped: list[tuple[int, int]]
) -> None:
    assert discard_reason(correct) == reason
    assert first_correct(correct) == first
    assert dpo_pairs(correct, "zip") == zipped


def test_product_pairs_every_right_with_every_wrong() -> None:
    assert dpo_pairs([True, False, True, False], "product") == [(0, 1), (0, 3), (2, 1), (2, 3)]
    with pytest.raises(ValueError, match="unknown pairing"):
        dpo_pairs([True, False], "random")


def test_only_seeded_sampled_requests_count_as_seeded_samples() -> None:
    # the backends run these alone and cold, so a sample's text never depends on the batch
    def req(prompt: str, seed: int | None, temperature: float = 1.0) -> ChatRequest:
        return ChatRequest.chat(prompt, temperature=temperature, seed=seed, max_tokens=8)

    reqs = [req("p", 10), req("p", 0), req("r", 1, 0.0), req("s", None), req("s", None, 0.0)]
    assert [r.seeded_sample for r in reqs] == [True, True, False, False, False]
