"""Table 2 (KR-20 mean ± SD over subjects) and Table 3 (accuracy per NA phrasing) of the NA
study, checked against direct computations on synthetic results."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from nabench.evaluation.tables import phrasing_table
from nabench.stats.paper_tables import kr20_mean_sd_by_category


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
    """Table 3 as the report makes it (`phrasing` → paper_table3): a run's accuracy on each
    na_keyed phrasing and the max − min spread; a cell where every answer is invalid
    measured nothing and is empty, not 0 (a 0 there read as a phrasing effect)."""
    rows = [  # run, config, accuracy, invalid_rate
        ("m1", "na_keyed", 0.5, 0.0),
        ("m1", "na_keyed__answer_not_found", 1.0, 0.0),
        ("m1", "original", 1.0, 0.0),
        ("m2", "na_keyed", 0.0, 0.25),
        ("m2", "na_keyed__answer_not_found", 0.75, 0.0),
        ("m3", "na_keyed", 0.4, 0.1),
        ("m3", "na_keyed__answer_not_found", 0.0, 1.0),  # nothing parsed
    ]
    configs = pd.DataFrame(rows, columns=["run", "config", "accuracy", "invalid_rate"])
    table = phrasing_table(configs).set_index("run")
    assert list(table.columns) == ["na_keyed", "na_keyed__answer_not_found", "spread"]
    assert table.loc["m1"].tolist() == [0.5, 1.0, 0.5]
    assert table.loc["m2"].tolist() == [0.0, 0.75, 0.75]  # a real 0 stays 0
    assert table.loc["m3", "na_keyed"] == 0.4
    assert math.isnan(table.loc["m3", "na_keyed__answer_not_found"])
    assert math.isnan(table.loc["m3", "spread"])  # one measured phrasing: no spread
