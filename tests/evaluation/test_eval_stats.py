"""Stats: hand-computed examples, scipy cross-checks, hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from property_settings import CHEAP, MODERATE
from scipy import stats as sps

from nabench.stats.inference import (
    accuracy_ci,
    anova_oneway,
    bootstrap_mean_ci,
    cohen_kappa,
    pearson,
    spearman,
    wilson_interval,
)


def test_wilson_hand_computed_and_scipy() -> None:
    # k = 8, n = 10, z = 1.959964: p = 0.8, z²/n = 0.384146,
    # centre = (0.8 + 0.192073) / 1.384146 = 0.716740,
    # half = z / 1.384146 · sqrt(0.8·0.2/10 + 0.384146/40) = 1.416010 · 0.160011 = 0.226578
    # → [0.716740 − 0.226578, 0.716740 + 0.226578] = [0.490162, 0.943318]
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.490162, abs=2e-6)
    assert hi == pytest.approx(0.943318, abs=2e-6)
    ref = sps.binomtest(8, 10).proportion_ci(confidence_level=0.95, method="wilson")
    assert (lo, hi) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0
    with pytest.raises(ValueError):
        wilson_interval(1, 0)


@CHEAP
@given(n=st.integers(1, 10_000), data=st.data(), conf=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_contains_estimate_and_matches_scipy(
    n: int, data: st.DataObject, conf: float
) -> None:
    k = data.draw(st.integers(0, n))
    lo, hi = wilson_interval(k, n, conf)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    ref = sps.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    assert lo == pytest.approx(ref.low, abs=1e-9)
    assert hi == pytest.approx(ref.high, abs=1e-9)


def test_bootstrap_ci_seeded_and_close_to_normal_approximation() -> None:
    scores = np.array([1.0] * 600 + [0.0] * 400)
    a = bootstrap_mean_ci(scores, n_resamples=4000, seed=1)
    b = bootstrap_mean_ci(scores, n_resamples=4000, seed=np.random.default_rng(1))
    assert a == b  # same seed, same draws
    # Bootstrap SE of a 0/1 mean ≈ sqrt(p q / n) = sqrt(0.24/1000) = 0.01549; ±1.96 SE.
    half = 1.959964 * math.sqrt(0.6 * 0.4 / 1000)
    assert a[0] == pytest.approx(0.6 - half, abs=0.004)
    assert a[1] == pytest.approx(0.6 + half, abs=0.004)


def test_bootstrap_ci_matches_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(7)
    scores = rng.choice([0.0, 0.25, 1.0], size=300, p=[0.3, 0.2, 0.5])
    ours = bootstrap_mean_ci(scores, n_resamples=20_000, seed=3)
    ref = sps.bootstrap(
        (scores,), np.mean, n_resamples=20_000, method="percentile", random_state=4
    ).confidence_interval
    # Different random streams: agree to Monte Carlo error (SE of the mean ≈ 0.025).
    assert ours[0] == pytest.approx(ref.low, abs=0.003)
    assert ours[1] == pytest.approx(ref.high, abs=0.003)


@MODERATE
@given(
    scores=st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=1, max_size=200),
    seed=st.integers(0, 2**32 - 1),
)
def test_accuracy_ci_contains_point_estimate(scores: list[float], seed: int) -> None:
    res = accuracy_ci(scores, n_resamples=200, seed=seed)
    assert res.accuracy == pytest.approx(float(np.mean(scores)), abs=1e-12)
    assert 0.0 <= res.wilson_low <= res.accuracy <= res.wilson_high <= 1.0
    assert 0.0 <= res.boot_low <= res.accuracy <= res.boot_high <= 1.0
    assert res.n == len(scores)


def test_accuracy_ci_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        accuracy_ci([0.5, 1.5])
    with pytest.raises(ValueError):
        accuracy_ci([])


def test_anova_hand_computed() -> None:
    # Means 2, 5, 8; grand mean 5. SSB = 3·(9 + 0 + 9) = 54, SSW = 3·(1 + 0 + 1) = 6.
    # F = (54 / 2) / (6 / 6) = 27. For F(2, d2): sf(x) = (1 + 2x/d2)^(−d2/2) = 10^−3.
    res = anova_oneway([1, 2, 3], [4, 5, 6], [7, 8, 9])
    assert res.f == pytest.approx(27.0, rel=1e-12)
    assert res.p_value == pytest.approx(1e-3, rel=1e-9)
    assert (res.df_between, res.df_within) == (2, 6)


def test_anova_two_groups_against_the_closed_form() -> None:
    # Means 2, 5; SSB = 2·(1.5² + 1.5²) = 9, SSW = 2 + 2 = 4; F = 9 / (4 / 2) = 4.5 on
    # (1, 2) df. F(1, 2) is t² on 2 df, whose two-sided tail is 1 − t / sqrt(2 + t²).
    res = anova_oneway([1, 3], [4, 6])
    assert res.f == pytest.approx(4.5, rel=1e-12)
    assert res.p_value == pytest.approx(1 - math.sqrt(4.5 / 6.5), rel=1e-12)


def test_anova_degenerate() -> None:
    res = anova_oneway([1, 1], [2, 2])
    assert res.f == math.inf and res.p_value == 0.0
    res = anova_oneway([1, 1], [1, 1])
    assert math.isnan(res.f) and math.isnan(res.p_value)
    with pytest.raises(ValueError):
        anova_oneway([1, 2, 3])
    with pytest.raises(ValueError):
        anova_oneway([1], [2])  # N = k leaves no within-group df


X5 = [1, 2, 3, 4, 5]
Y5 = [2, 4, 5, 4, 5]


def _t3_two_sided(t: float) -> float:
    """Two-sided tail of Student's t on 3 df, closed form (independent of scipy)."""
    u = t / math.sqrt(3)
    return 1 - (2 / math.pi) * (u / (1 + u * u) + math.atan(u))


def test_pearson_hand_computed() -> None:
    # xc = [−2, −1, 0, 1, 2], yc = [−2, 0, 1, 0, 1]: Sxy = 6, Sxx = 10, Syy = 6,
    # r = 6 / sqrt(60); t = r · sqrt(3 / (1 − 0.6)) = 3 / sqrt(2) on 3 df.
    res = pearson(X5, Y5)
    assert res.r == pytest.approx(6 / math.sqrt(60), rel=1e-12)
    assert res.p_value == pytest.approx(_t3_two_sided(3 / math.sqrt(2)), rel=1e-12)


def test_spearman_hand_computed() -> None:
    # Ranks of y with ties: [1, 2.5, 4.5, 2.5, 4.5]; centred [−2, −.5, 1.5, −.5, 1.5].
    # Sxy = 4 + .5 + 0 − .5 + 3 = 7, Sxx = 10, Syy = 9 → rho = 7 / sqrt(90).
    res = spearman(X5, Y5)
    rho = 7 / math.sqrt(90)
    assert res.r == pytest.approx(rho, rel=1e-12)
    assert res.p_value == pytest.approx(_t3_two_sided(rho * math.sqrt(3 / (1 - rho**2))), rel=1e-12)


@CHEAP
@given(xy=st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), min_size=3, max_size=60))
def test_correlations_match_the_textbook_formulas(xy: list[tuple[int, int]]) -> None:
    """r from numpy's corrcoef (of average ranks for Spearman), p from the t statistic
    r·sqrt((n − 2)/(1 − r²)): other code paths than scipy's pearsonr / spearmanr."""
    x = np.array([a for a, _ in xy], dtype=float)
    y = np.array([b for _, b in xy], dtype=float)
    assume(np.ptp(x) > 0 and np.ptp(y) > 0)
    df = len(x) - 2
    for ours, (a, b) in (
        (pearson(x, y), (x, y)),
        (spearman(x, y), (sps.rankdata(x), sps.rankdata(y))),
    ):
        r = float(np.corrcoef(a, b)[0, 1])
        assert ours.r == pytest.approx(r, abs=1e-9)
        if 1 - abs(r) < 1e-9:  # a perfect correlation: p = 0 (t is infinite)
            assert ours.p_value == pytest.approx(0.0, abs=1e-7)
            continue
        p = 2 * sps.t.sf(abs(r) * math.sqrt(df / (1 - r * r)), df)
        assert ours.p_value == pytest.approx(p, rel=1e-6, abs=1e-12)


def test_correlation_degenerate() -> None:
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]).r)
    assert pearson([1, 2], [3, 1]).p_value == 1.0
    assert pearson([1, 2, 3], [2, 4, 6]).p_value == 0.0
    assert (spearman([1, 2], [3, 1]).r, spearman([1, 2], [3, 1]).p_value) == (-1.0, 1.0)
    assert math.isnan(spearman([2, 2, 2], [1, 2, 3]).p_value)
    with pytest.raises(ValueError):
        pearson([1, 2], [1, 2, 3])


def _labels_from_confusion(conf: list[list[int]]) -> tuple[list[int], list[int]]:
    a: list[int] = []
    b: list[int] = []
    for i, row in enumerate(conf):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


def test_kappa_binary_hand_computed() -> None:
    # yes/yes 20, yes/no 5, no/yes 10, no/no 15 (n = 50): p_o = 35/50 = 0.7,
    # A says yes 25/50, B says yes 30/50: p_e = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.2/0.5 = 0.4.
    a, b = _labels_from_confusion([[15, 10], [5, 20]])  # label 0 = no, 1 = yes
    res = cohen_kappa(a, b, seed=0)
    assert res.kappa == pytest.approx(0.4, rel=1e-12)
    assert res.agreement == pytest.approx(0.7, rel=1e-12)
    assert res.confusion == ((15, 10), (5, 20))
    assert res.labels == (0, 1) and res.n == 50
    assert res.ci_low < 0.4 < res.ci_high


def test_kappa_multiclass_hand_computed() -> None:
    # Confusion [[2,1,0],[0,3,1],[1,0,2]], n = 10: p_o = 7/10; rows [3,4,3], cols [3,4,3],
    # p_e = (9 + 16 + 9) / 100 = 0.34; κ = 0.36 / 0.66 = 6/11.
    conf = [[2, 1, 0], [0, 3, 1], [1, 0, 2]]
    ia, ib = _labels_from_confusion(conf)
    names = ["x", "y", "z"]
    res = cohen_kappa([names[i] for i in ia], [names[i] for i in ib])
    assert res.kappa == pytest.approx(6 / 11, rel=1e-12)
    assert res.agreement == pytest.approx(0.7)
    assert res.confusion == tuple(tuple(r) for r in conf)
    assert res.labels == ("x", "y", "z")


def test_kappa_explicit_labels_and_degenerate() -> None:
    res = cohen_kappa(["A", "A"], ["A", "A"], labels=["A", "B"])
    assert math.isnan(res.kappa)  # p_e = 1: undefined
    assert math.isnan(res.ci_low) and math.isnan(res.ci_high)
    assert res.agreement == 1.0
    assert res.confusion == ((2, 0), (0, 0))
    with pytest.raises(ValueError, match="not in"):
        cohen_kappa(["A"], ["C"], labels=["A", "B"])
    with pytest.raises(ValueError):
        cohen_kappa(["A"], ["A", "B"])


def test_kappa_bootstrap_reproducible() -> None:
    a, b = _labels_from_confusion([[15, 10], [5, 20]])
    r1 = cohen_kappa(a, b, seed=5, n_resamples=500)
    r2 = cohen_kappa(a, b, seed=5, n_resamples=500)
    assert (r1.ci_low, r1.ci_high) == (r2.ci_low, r2.ci_high)


label_lists = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from("ABCD"), min_size=n, max_size=n),
        st.lists(st.sampled_from("ABCD"), min_size=n, max_size=n),
    )
)


@MODERATE
@given(pair=label_lists, seed=st.integers(0, 1000))
def test_kappa_properties(pair: tuple[list[str], list[str]], seed: int) -> None:
    a, b = pair
    ab = cohen_kappa(a, b, n_resamples=50, seed=seed)
    ba = cohen_kappa(b, a, n_resamples=50, seed=seed)
    same = cohen_kappa(a, a, n_resamples=50, seed=seed)
    if len(set(a)) > 1:
        assert same.kappa == 1.0
    else:
        assert math.isnan(same.kappa)
    assert (math.isnan(ab.kappa) and math.isnan(ba.kappa)) or ab.kappa == ba.kappa
    assert (ab.ci_low, ab.ci_high) == pytest.approx((ba.ci_low, ba.ci_high), nan_ok=True)
    assert ab.confusion == tuple(zip(*ba.confusion, strict=True))
    if not math.isnan(ab.kappa):
        assert ab.kappa <= ab.agreement + 1e-12
        assert -1.0 <= ab.kappa <= 1.0


def test_exact_spearman_p_is_the_permutation_test_of_spearmanr() -> None:
    """`spearman(exact_max_n=...)`'s exact p (all n! pairings, batched), which the panel uses,
    equals scipy's permutation test of `spearmanr` itself, ties included; one spearmanr call
    per pairing took ~55 s at n = 8."""
    rng = np.random.default_rng(7)
    for n in (4, 5, 6, 7):
        x = np.round(rng.random(n), 1)  # ties at one decimal
        y = rng.integers(0, 4, n) / 4
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        res = spearman(x, y, exact_max_n=8)
        rho, p, method = res.r, res.p_value, res.method
        ref = sps.permutation_test(
            (x,), lambda a: sps.spearmanr(a, y).statistic,  # noqa: B023
            permutation_type="pairings", n_resamples=math.inf,
        )  # fmt: skip
        assert method == "exact" and rho == pytest.approx(sps.spearmanr(x, y).statistic)
        assert p == pytest.approx(ref.pvalue, abs=1e-12), (n, x, y)


def test_spearman_is_exact_only_up_to_exact_max_n() -> None:
    x, y = [0.1, 0.4, 0.3, 0.9, 0.7, 0.2], [0.2, 0.5, 0.1, 0.8, 0.9, 0.3]
    assert spearman(x, y).method == "t approximation"
    assert spearman(x, y, exact_max_n=5).method == "t approximation"
    exact = spearman(x, y, exact_max_n=6)
    assert exact.method == "exact" and exact.r == spearman(x, y).r
    # a perfect ranking of 6: exactly 2 of the 720 pairings are as extreme (rho = +1 and -1)
    assert spearman(x, x, exact_max_n=6).p_value == pytest.approx(2 / 720)
    assert spearman([1, 2], [3, 1], exact_max_n=8).p_value == 1.0  # two points: no evidence
