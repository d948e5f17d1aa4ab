"""Paired drop (bootstrap CI over items or source-item clusters) and McNemar's test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from nabench.stats.paired import mcnemar, paired_drop, paired_drops


@pytest.mark.parametrize(
    ("b", "c"),
    [(0, 0), (0, 1), (3, 0), (5, 5), (7, 2), (12, 12), (24, 0), (13, 11), (25, 0), (40, 22),
     (300, 250), (1000, 5)],
)  # fmt: skip
def test_mcnemar_equals_statsmodels(b: int, c: int) -> None:
    ours = mcnemar(b, c)
    exact = ours.method == "exact"
    assert exact == (b + c < 25)
    ref = sm_mcnemar([[10, b], [c, 10]], exact=exact, correction=True)
    if b + c == 0:
        assert ours.p_value == 1.0  # statsmodels divides 0 by 0 here
        return
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-12, abs=1e-300)
    assert ours.statistic == pytest.approx(float(ref.statistic), rel=1e-12)


def test_paired_drop_point_estimates() -> None:
    o = np.array([1, 1, 1, 1, 0, 0.25])
    v = np.array([0, 1, 0, 1, 0, 1])
    d = paired_drop(o, v)
    assert d.acc_original == pytest.approx(4.25 / 6)
    assert d.acc_variant == pytest.approx(3 / 6)
    assert d.diff == pytest.approx(1.25 / 6)
    assert d.rel_drop == pytest.approx(1.25 / 4.25)
    assert d.diff_low <= d.diff <= d.diff_high
    assert d.rel_low <= d.rel_drop <= d.rel_high
    assert (d.n, d.n_clusters) == (6, 6)


def test_constant_scores_give_a_degenerate_interval() -> None:
    d = paired_drop(np.ones(50), np.zeros(50))
    assert (d.diff, d.diff_low, d.diff_high) == (1.0, 1.0, 1.0)
    z = paired_drop(np.zeros(10), np.zeros(10))
    assert math.isnan(z.rel_drop) and math.isnan(z.rel_low)


def test_one_item_has_no_interval() -> None:
    """One item (or one cluster of rows) gave the zero-width "95 % CI" [d, d]: with nothing
    to resample, every resample is the sample. The estimate stays; the interval is nan."""
    for d in (paired_drop([1.0], [0.0]), paired_drop([1, 1, 0], [0, 0, 0], clusters=[7, 7, 7])):
        assert d.n_clusters == 1 and d.diff == pytest.approx(d.acc_original - d.acc_variant)
        assert all(math.isnan(x) for x in (d.diff_low, d.diff_high, d.rel_low, d.rel_high))
    two = paired_drop([1.0, 0.0], [0.0, 0.0])
    assert (two.diff_low, two.diff_high) == (0.0, 1.0)


def _simulate(rng: np.random.Generator, n: int, p_o: float, p_v: float) -> tuple:
    o = rng.random(n) < p_o
    # variant correct mostly where original is: a paired, correlated design
    v = np.where(o, rng.random(n) < p_v / p_o, False)
    return o.astype(float), v.astype(float)


def test_ci_covers_the_true_drop_in_simulated_panels() -> None:
    """200 panels of 400 items with a known drop 0.70 → 0.55: the 95 % CI of the
    difference must contain 0.15 in at least 93 % of them (and the relative drop's CI
    0.15 / 0.70 likewise)."""
    rng = np.random.default_rng(2024)
    true_diff, true_rel = 0.15, 0.15 / 0.70
    hits_d = hits_r = 0
    for k in range(200):
        o, v = _simulate(rng, 400, 0.70, 0.55)
        d = paired_drop(o, v, n_resamples=1000, seed=k)
        hits_d += d.diff_low <= true_diff <= d.diff_high
        hits_r += d.rel_low <= true_rel <= d.rel_high
    assert hits_d >= 186, hits_d
    assert hits_r >= 186, hits_r


def test_clustered_rows_are_resampled_by_source_item() -> None:
    """Five variant rows per source item that share the item's outcome: resampling rows
    would treat them as independent and give far too narrow intervals; resampling items
    keeps the coverage."""
    rng = np.random.default_rng(7)
    hits_cluster = hits_rows = 0
    for k in range(200):
        o_item, v_item = _simulate(rng, 120, 0.70, 0.55)
        o, v = np.repeat(o_item, 5), np.repeat(v_item, 5)
        clusters = np.repeat(np.arange(120), 5)
        c = paired_drop(o, v, clusters, n_resamples=1000, seed=k)
        r = paired_drop(o, v, n_resamples=1000, seed=k)
        assert c.n_clusters == 120 and r.n_clusters == 600
        hits_cluster += c.diff_low <= 0.15 <= c.diff_high
        hits_rows += r.diff_low <= 0.15 <= r.diff_high
    assert hits_cluster >= 186, hits_cluster
    assert hits_rows < 170, hits_rows  # the unclustered CI under-covers


@pytest.mark.parametrize("clustered", [False, True])
def test_a_groups_interval_is_the_one_it_gets_alone(clustered: bool) -> None:
    """Every group of `paired_drops` drew from one stream in group order, over cluster
    types in order of first appearance across groups: a group beside another (whose first
    row was of another type) got another CI than alone (-0.04 vs -0.02)."""
    rng = np.random.default_rng(1)
    o, v = (rng.random(50) < 0.7) * 1.0, (rng.random(50) < 0.5) * 1.0
    o[0] = v[0] = 1.0
    clusters = np.arange(50) // 2 if clustered else None
    alone = paired_drop(o, v, clusters)
    other_o, other_v = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0])
    both_clusters = None if clusters is None else np.r_[[-1, -2, -3, -4], clusters]
    groups = np.r_[[0] * 4, [1] * 50]
    both = paired_drops(np.r_[other_o, o], np.r_[other_v, v], groups, both_clusters)
    for name in ("diff_low", "diff_high", "rel_low", "rel_high"):
        assert both[name][1] == getattr(alone, name), name


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="equally long"):
        paired_drop([1, 0], [1])
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar(-1, 2)
