"""Reliability: KR-20, alpha, discrimination index, item-rest correlation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from property_settings import CHEAP
from scipy import stats as sps

from nabench.stats.reliability import (
    cronbach_alpha,
    discrimination_groups,
    discrimination_index,
    item_rest_correlation,
    kr20,
    kr20_by_group,
)

# 4 models × 3 items (Guttman pattern).
GUTTMAN = [[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]]


def _kr20_loop(rows: list[list[float]]) -> float:
    """Textbook KR-20 in plain Python loops (population variances)."""
    m, k = len(rows), len(rows[0])
    pq = 0.0
    for j in range(k):
        p = sum(r[j] for r in rows) / m
        pq += p * (1 - p)
    totals = [sum(r) for r in rows]
    mean = sum(totals) / m
    var = sum((t - mean) ** 2 for t in totals) / m
    return k / (k - 1) * (1 - pq / var)


def test_kr20_hand_computed() -> None:
    # p = [3/4, 1/2, 1/4] → Σpq = 3/16 + 4/16 + 3/16 = 10/16 = 0.625.
    # totals [3, 2, 1, 0], mean 1.5, population σ² = (2.25+.25+.25+2.25)/4 = 1.25.
    # KR-20 = 3/2 · (1 − 0.625/1.25) = 0.75.
    assert kr20(GUTTMAN) == pytest.approx(0.75, rel=1e-12)
    # p = [.5, .5] → Σpq = 0.5; totals [1, 1, 2, 0], σ² = (0+0+1+1)/4 = 0.5 → 2·(1 − 1) = 0.
    assert kr20([[1, 0], [0, 1], [1, 1], [0, 0]]) == pytest.approx(0.0, abs=1e-12)
    # Items that trade off perfectly: totals [1, 1] → σ² = 0 → undefined (nan).
    assert math.isnan(kr20([[1, 0], [0, 1]]))


def test_kr20_degenerate_cases() -> None:
    assert math.isnan(kr20([[1], [0], [1]]))  # k = 1
    assert math.isnan(kr20([[1, 1, 0]]))  # one model: σ² = 0
    assert math.isnan(kr20([[1, 0, 1], [1, 0, 1]]))  # equal totals
    assert math.isnan(cronbach_alpha([[1], [0]]))
    with pytest.raises(ValueError, match="2-D"):
        kr20([1, 0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        kr20([[1, 2], [0, 1]])


def test_kr20_matches_loop_and_sample_variance_alpha() -> None:
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(30, 1))
    x = (rng.random((30, 12)) < 1 / (1 + np.exp(-(ability - rng.normal(size=12))))).astype(float)
    ours = kr20(x)
    assert ours == pytest.approx(_kr20_loop(x.tolist()), rel=1e-12)
    # Alpha with sample variances (ddof=1) in both places: the n/(n−1) factor cancels,
    # so on 0/1 data it must equal our population-variance KR-20.
    k = x.shape[1]
    alpha_ddof1 = k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / x.sum(axis=1).var(ddof=1))
    assert ours == pytest.approx(alpha_ddof1, rel=1e-12)
    assert cronbach_alpha(x) == pytest.approx(ours, rel=1e-12)


def test_kr20_by_group_matches_submatrices() -> None:
    rng = np.random.default_rng(1)
    x = (rng.random((40, 20)) < 0.6).astype(float)
    x[:, 5:9] = x[:, [4]]  # make one group reliable
    groups = np.array(["a"] * 4 + ["b"] * 6 + ["c"] * 9 + ["d"])
    got = kr20_by_group(x, groups)
    assert set(got) == {"a", "b", "c", "d"}
    for g in "abc":
        assert got[g] == pytest.approx(kr20(x[:, groups == g]), rel=1e-12)
    assert math.isnan(got["d"])  # one item: k < 2
    with pytest.raises(ValueError, match="one group label per item"):
        kr20_by_group(x, groups[:-1])


@CHEAP
@given(
    column=st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=60),
    k=st.integers(2, 30),
)
def test_identical_items_give_kr20_one(column: list[float], k: int) -> None:
    col = np.array(column)
    x = np.repeat(col[:, None], k, axis=1)
    if np.ptp(col) > 0:
        assert kr20(x) == pytest.approx(1.0, abs=1e-12)
        assert cronbach_alpha(x) == pytest.approx(1.0, abs=1e-12)
    else:
        assert math.isnan(kr20(x))


@CHEAP
@given(
    column=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=2, max_size=40),
    k=st.integers(2, 10),
)
def test_identical_partial_credit_items_give_alpha_one(column: list[float], k: int) -> None:
    col = np.array(column)
    x = np.repeat(col[:, None], k, axis=1)
    if np.ptp(col) > 0:
        assert cronbach_alpha(x) == pytest.approx(1.0, abs=1e-12)
        assert kr20(x) <= 1.0 + 1e-12  # p q ≥ item variance for partial credit


@pytest.mark.parametrize(
    ("n_models", "n_group"),
    [(2, 1), (3, 1), (4, 1), (5, 1), (6, 2), (10, 3), (50, 14), (100, 27), (150, 41)],
)
def test_group_size_rounding(n_models: int, n_group: int) -> None:
    # round half up of 0.27·n: 1.35→1, 1.62→2, 2.7→3, 13.5→14, 27→27, 40.5→41.
    x = np.zeros((n_models, 2))
    grp = discrimination_groups(x)
    assert grp.n_group == n_group
    assert grp.upper.sum() == pytest.approx(n_group)
    assert grp.lower.sum() == pytest.approx(n_group)


# 10 models × 3 items; totals 3, 2, 2, 2, 1, 1, 1, 1, 0, 0.
TIED = [
    [1, 1, 1],
    [1, 1, 0],
    [1, 0, 1],
    [0, 1, 1],
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
]


def test_discrimination_hand_computed_with_ties() -> None:
    # n_group = round(2.7) = 3. Upper: model 0 plus 2 places shared by the three models
    # with total 2 (weight 2/3 each) → U = 1 + 2/3·[2, 2, 2] = [7/3, 7/3, 7/3].
    # Lower: models 8, 9 plus 1 place shared by the four with total 1 (weight 1/4)
    # → L = 1/4·[2, 1, 1] = [1/2, 1/4, 1/4].
    # D = (U − L)/3 = [(7/3 − 1/2)/3, (7/3 − 1/4)/3, …] = [11/18, 25/36, 25/36].
    d = discrimination_index(TIED)
    np.testing.assert_allclose(d, [11 / 18, 25 / 36, 25 / 36], rtol=1e-12)
    perm = np.random.default_rng(0).permutation(10)
    np.testing.assert_allclose(discrimination_index(np.array(TIED)[perm]), d, rtol=1e-12)


def test_discrimination_signs() -> None:
    # GUTTMAN (4 models → n_group 1): top model [1,1,1], bottom [0,0,0] → D = 1 each.
    np.testing.assert_array_equal(discrimination_index(GUTTMAN), [1.0, 1.0, 1.0])
    # Item 2 is solved only by the weakest models: D < 0.
    x = [[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 1]]
    # Totals [2, 2, 1, 1, 1]; n_group = round(1.35) = 1. Upper: models 0, 1 tie at 2
    # (weight 1/2 each) → U = [1, 1, 0]. Lower: models 2, 3, 4 tie at 1 (weight 1/3)
    # → L = 1/3·([1,0,0] + [0,0,1] + [0,0,1]) = [1/3, 0, 2/3]. D = U − L.
    np.testing.assert_allclose(discrimination_index(x), [2 / 3, 1.0, -2 / 3], rtol=1e-12)
    with pytest.raises(ValueError, match="2 models"):
        discrimination_index([[1, 0]])


@CHEAP
@given(
    x=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=30),
        elements=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    ),
    seed=st.integers(0, 1000),
)
def test_discrimination_bounded_and_order_free(x: np.ndarray, seed: int) -> None:
    d = discrimination_index(x)
    assert d.shape == (x.shape[1],)
    assert np.all((d >= -1.0) & (d <= 1.0))
    perm = np.random.default_rng(seed).permutation(x.shape[0])
    np.testing.assert_allclose(discrimination_index(x[perm]), d, atol=1e-12)
    grp = discrimination_groups(x)
    assert grp.upper.min() >= 0 and grp.upper.max() <= 1 + 1e-12


def test_item_rest_correlation_matches_scipy() -> None:
    rng = np.random.default_rng(2)
    x = (rng.random((25, 8)) < 0.5).astype(float)
    x[:, 7] = 1.0  # constant item → nan
    r = item_rest_correlation(x)
    for j in range(7):
        rest = x.sum(axis=1) - x[:, j]
        assert r[j] == pytest.approx(sps.pearsonr(x[:, j], rest).statistic, rel=1e-10)
    assert math.isnan(r[7])
