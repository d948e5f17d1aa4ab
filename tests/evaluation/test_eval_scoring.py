"""Scoring: generation credit, individual prior, majority baseline, baseline test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP
from scipy import stats as sps

from nabench.evaluation.parsing import INVALID, parse_answer
from nabench.evaluation.scoring import (
    baseline_test,
    individual_prior_score,
    individual_prior_scores,
    majority_baseline,
    score_codes,
    score_generation,
)


def test_generation_score_examples() -> None:
    assert score_generation("B", "B") == 1.0
    assert score_generation("A", "B") == 0.0
    assert score_generation(None, "B") == 0.25
    assert score_generation(None, "B", invalid_credit=0.0) == 0.0
    got = score_codes([1, 0, INVALID, 3], [1, 1, 2, 3])
    assert got.tolist() == [1.0, 0.0, 0.25, 1.0]
    assert score_codes([INVALID], [0], invalid_credit=0).tolist() == [0.0]
    with pytest.raises(ValueError, match="shapes"):
        score_codes([0, 1], [0])


@CHEAP
@given(
    text=st.one_of(st.text(), st.sampled_from(["Answer: A", "Answer: (B)", "C", "Answer: x"])),
    gold=st.sampled_from("ABCD"),
    credit=st.floats(0.01, 0.99),
)
def test_partial_credit_only_for_invalid(text: str, gold: str, credit: float) -> None:
    pred = parse_answer(text, 4)
    score = score_generation(pred, gold, credit)
    # credit is strictly between 0 and 1, so it identifies the invalid branch.
    assert (score == credit) == (pred is None)
    assert score in ((1.0, 0.0) if pred is not None else (credit,))


@CHEAP
@given(
    pairs=st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 3)), max_size=50),
    credit=st.sampled_from([0.0, 0.25]),
)
def test_vectorised_score_matches_scalar(pairs: list[tuple[int, int]], credit: float) -> None:
    letters = "ABCD"
    pred = np.array([p for p, _ in pairs], dtype=np.int8)
    gold = np.array([g for _, g in pairs], dtype=np.int8)
    expected = [
        score_generation(None if p < 0 else letters[p], letters[g], credit) for p, g in pairs
    ]
    assert score_codes(pred, gold, credit).tolist() == expected


def test_individual_prior_examples() -> None:
    # S = {A, C}: gold A in S → 1/2; gold B not in S → 0.
    assert individual_prior_score([True, False, True, False], 0) == 0.5
    assert individual_prior_score([True, False, True, False], 1) == 0.0
    assert individual_prior_score([False, False, False, False], 2) == 0.25  # S empty
    assert individual_prior_score([None, None, None, None], 2) == 0.25  # invalid ≠ True
    assert individual_prior_score([False, True, None, False], 1) == 1.0  # |S| = 1
    assert individual_prior_score([True] * 4, 3) == 0.25  # 1/|S| with |S| = 4
    assert individual_prior_score([False] * 4, 0, empty_credit=0.0) == 0.0
    got = individual_prior_scores(
        [[True, False, True, False], [False] * 4, [True, True, True, False]], [2, 0, 3]
    )
    assert got.tolist() == [0.5, 0.25, 0.0]


@CHEAP
@given(
    rows=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=30),
    data=st.data(),
)
def test_individual_prior_vectorised_matches_scalar(
    rows: list[list[bool]], data: st.DataObject
) -> None:
    gold = data.draw(st.lists(st.integers(0, 3), min_size=len(rows), max_size=len(rows)))
    got = individual_prior_scores(rows, gold)
    assert got.tolist() == [individual_prior_score(r, g) for r, g in zip(rows, gold, strict=True)]


def test_majority_baseline() -> None:
    assert majority_baseline(["A", "A", "B", "C"]) == 0.5
    assert majority_baseline("ABCD") == 0.25
    assert majority_baseline([3, 3, 3]) == 1.0
    with pytest.raises(ValueError):
        majority_baseline([])


def test_baseline_binomial_hand_computed() -> None:
    # 10/10 correct vs baseline 0.5: P(X >= 10) = 0.5**10 = 1/1024.
    res = baseline_test(np.ones(10), 0.5)
    assert res.method == "binomial"
    assert res.p_value == pytest.approx(1 / 1024, rel=1e-12)
    assert res.statistic == 10 and res.mean == 1.0 and res.n == 10
    # 7/10 vs 0.5: P(X >= 7) = (C(10,7)+C(10,8)+C(10,9)+C(10,10)) / 1024 = 176/1024.
    res = baseline_test([1] * 7 + [0] * 3, 0.5)
    assert res.p_value == pytest.approx(176 / 1024, rel=1e-12)


def test_baseline_t_test_matches_scipy() -> None:
    scores = [1, 0.25, 0, 1, 1, 0.25, 1, 0, 1, 1]
    res = baseline_test(scores, 0.3)
    ref = sps.ttest_1samp(scores, 0.3, alternative="greater")
    assert res.method == "t"
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    # Hand check of t: mean = 6.5/10 = 0.65; sum of squares = 6 + 2*0.0625 = 6.125,
    # sample var = (6.125 - 10*0.65**2) / 9 = 1.9/9; t = 0.35 / sqrt(1.9/90).
    assert res.statistic == pytest.approx(0.35 / math.sqrt(1.9 / 90), rel=1e-12)
    forced = baseline_test([1, 0, 1, 1], 0.25, method="t")
    ref2 = sps.ttest_1samp([1, 0, 1, 1], 0.25, alternative="greater")
    assert forced.p_value == pytest.approx(ref2.pvalue, rel=1e-12)


def test_baseline_degenerate_cases() -> None:
    assert baseline_test([0.25, 0.25], 0.1).p_value == 0.0
    assert baseline_test([0.25, 0.25], 0.5).p_value == 1.0
    assert math.isnan(baseline_test([0.25, 0.25], 0.25).statistic)
    with pytest.raises(ValueError, match="0 or 1"):
        baseline_test([0.25, 1], 0.5, method="binomial")
    with pytest.raises(ValueError):
        baseline_test([], 0.5)
