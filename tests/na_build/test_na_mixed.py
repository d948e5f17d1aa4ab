"""`na_mixed` on the full MMLU test build: exactly one NA option per item, the key on
1/k of items, the gold kept as key elsewhere, rows traceable to `original`, invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from nabench.pipelines.skeleton import BuildResult
from nabench.validate import validate_path


def _rows(build: BuildResult, config: str) -> pd.DataFrame:
    return pd.read_parquet(next((build.out / config).glob("*.parquet")))


def test_na_is_the_key_on_one_in_k_items(mmlu_build: BuildResult) -> None:
    mixed = _rows(mmlu_build, "na_mixed")
    original = _rows(mmlu_build, "original").set_index("id")
    assert len(mixed) == len(original)  # every eligible item
    assert set(mixed["id"]) == set(original.index)  # traceable
    choices = mixed["choices"].map(list)
    na = "None of the above"
    assert (choices.map(lambda cs: cs.count(na)) == 1).all()  # exactly one NA option
    key_text = [cs[a] for cs, a in zip(choices, mixed["answer"], strict=True)]
    keyed = np.array([t == na for t in key_text])
    k = choices.map(len).to_numpy()
    assert abs(keyed.mean() - float(np.mean(1.0 / k))) <= 0.01  # 1/k ± 1 %
    gold = original.loc[mixed["id"]]
    gold_text = [cs[a] for cs, a in zip(gold["choices"], gold["answer"], strict=True)]
    # the key is the original gold text wherever NA is not the key, and in the same slot
    assert all(t == g for t, g, kd in zip(key_text, gold_text, keyed, strict=True) if not kd)
    assert (mixed["answer"].to_numpy() == gold["answer"].to_numpy()).all()
    # where NA is not the key it replaced a distractor drawn uniformly: every slot is hit
    dist = mixed.loc[~keyed, "replaced_index"].to_numpy() - mixed.loc[~keyed, "answer"].to_numpy()
    assert set(np.unique(dist)) == {-3, -2, -1, 1, 2, 3}


def test_na_mixed_draws_are_seeded_per_item(mmlu_build: BuildResult) -> None:
    from nabench.perturb import NAMixed
    from nabench.schemas.columns import ItemColumns

    mixed = _rows(mmlu_build, "na_mixed")
    head = mixed.head(50)
    table = pa.table(
        {"id": head["id"], "source": head["source"], "subject": head["subject"],
         "question": head["question"], "choices": head["original_choices"].map(list),
         "answer": head["original_answer"]}
    )  # fmt: skip
    seed = int(mixed["seed"].iloc[0])
    alone = NAMixed().build(ItemColumns.from_table(table), seed)  # 50 items, not 14,000
    assert alone.column("replaced_index").to_pylist() == head["replaced_index"].tolist()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda cs, a, r: (cs, (a + 1) % len(cs)),  # key moved
        lambda cs, a, r: ([("x" if i == r else c) for i, c in enumerate(cs)], a),  # NA gone
    ],
)
def test_validate_rejects_broken_na_mixed_rows(
    mmlu_build: BuildResult, tmp_path: pytest.TempPathFactory, corrupt: object
) -> None:
    mixed = _rows(mmlu_build, "na_mixed").head(20)
    cs, a, r = (
        list(mixed.at[3, "choices"]),
        int(mixed.at[3, "answer"]),
        mixed.at[3, "replaced_index"],
    )
    new_cs, new_a = corrupt(cs, a, int(r))  # type: ignore[operator]
    mixed.at[3, "choices"] = new_cs
    mixed.at[3, "answer"] = new_a
    path = tmp_path / "na_mixed.parquet"  # type: ignore[operator]
    mixed.to_parquet(path, index=False)
    report = validate_path(path)
    rules = {v.rule for v in report.violations}
    assert rules & {"na_mixed_in_place", "na_mixed_key_is_na_or_gold", "na_exactly_once"}
    assert {v.row for v in report.violations} == {3}


def test_card_lists_the_configs_a_shortcut_wins(mmlu_build: BuildResult) -> None:
    card = (mmlu_build.out / "README.md").read_text()
    section = card.split("## Shortcuts", 1)[1].split("\n## ", 1)[0]
    assert "| `na_keyed/test` | `always-na` | 100.0% |" in section
    assert "| `na_distractor/test` | `never-na` |" in section  # avoiding NA pays there
    assert "`na_mixed/test` | `always-na`" not in section
    assert "`na_mixed/test` | `never-na`" not in section


def test_always_na_is_no_better_than_the_majority_on_na_mixed(mmlu_build: BuildResult) -> None:
    from nabench.evaluation.shortcuts import score_shortcuts
    from nabench.evaluation.strategies import ItemBatch

    mixed = _rows(mmlu_build, "na_mixed")
    batch = ItemBatch.from_lists(mixed["id"], mixed["choices"].map(list), mixed["answer"])
    scores = {s.strategy: s for s in score_shortcuts(batch)}
    na = scores["always-na"]
    assert na.accuracy <= na.majority_baseline and not na.beats_majority
    assert not scores["never-na"].beats_majority
