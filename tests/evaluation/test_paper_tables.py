"""Table 2 (KR-20 mean ± SD over subjects) and Table 3 (accuracy per NA phrasing) of the NA
study, checked against direct computations on a synthetic panel."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from nabench.stats.paper_tables import accuracy_by_phrasing, kr20_mean_sd_by_category


def _kr20(x: np.ndarray) -> float:
    """KR-20 written out: k/(k-1) * (1 - sum p q / var(total)), population variance."""
    k = x.shape[1]
    p = x.mean(axis=0)
    return k / (k - 1) * (1 - (p * (1 - p)).sum() / x.sum(axis=1).var())


def test_table2_is_mean_and_sd_of_per_subject_kr20() -> None:
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(28, 1))
    subjects = ["s1"] * 30 + ["s2"] * 20 + ["s3"] * 25
    difficulty = rng.normal(size=(1, len(subjects)))
    x = (rng.random((28, len(subjects))) < 1 / (1 + np.exp(-(ability - difficulty)))).astype(float)
    category = {"s1": "stem", "s2": "stem", "s3": "humanities"}
    table = kr20_mean_sd_by_category({"original": x}, subjects, category)
    per = [_kr20(x[:, :30]), _kr20(x[:, 30:50]), _kr20(x[:, 50:])]
    stem = table[table["category"] == "stem"].iloc[0]
    assert math.isclose(stem["kr20_mean"], np.mean(per[:2]))
    assert math.isclose(stem["kr20_sd"], np.std(per[:2], ddof=1))
    assert stem["n_subjects"] == 2
    hum = table[table["category"] == "humanities"].iloc[0]
    assert math.isclose(hum["kr20_mean"], per[2]) and math.isnan(hum["kr20_sd"])
    # Not the pooled KR-20 of the category's items.
    assert not math.isclose(stem["kr20_mean"], _kr20(x[:, :50]))


def test_table3_accuracy_per_phrasing_per_model() -> None:
    scores = pd.DataFrame(
        {
            "model": ["m1"] * 4 + ["m2"] * 4,
            "config": ["na_keyed", "na_keyed", "na_keyed__answer_not_found", "original"] * 2,
            "score": [1, 0, 1, 1, 0, 0, 1, 0],
        }
    )
    phrasing = {"na_keyed": "None of the above", "na_keyed__answer_not_found": "Answer not found"}
    table = accuracy_by_phrasing(scores, phrasing)
    assert list(table.columns) == ["None of the above", "Answer not found"]
    assert table.loc["m1"].tolist() == [0.5, 1.0]
    assert table.loc["m2"].tolist() == [0.0, 1.0]
