"""Accuracy confidence intervals, one-way ANOVA, correlations and Cohen's kappa.

ANOVA and the correlations are scipy's (``f_oneway``, ``pearsonr``, ``spearmanr``)
behind the input checks and the degenerate cases this module documents; the Wilson
interval, the bootstrap and kappa are computed here with numpy (scipy supplies the
normal quantile). Tests check each against hand-computed values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

__all__ = [
    "AccuracyCI",
    "AnovaResult",
    "Correlation",
    "KappaResult",
    "accuracy_ci",
    "anova_oneway",
    "bootstrap_mean_ci",
    "cohen_kappa",
    "pearson",
    "score_fields",
    "spearman",
    "wilson_interval",
]

Seed = int | np.random.Generator

# Bootstrap work is chunked so a block of resamples stays around 2M numbers in memory.
_BLOCK_ELEMS = 2_000_000


def _rng(seed: Seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(sps.norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n``.

    ``successes`` may be fractional (sum of partial-credit scores); the interval is then
    an approximation, exact coverage theory holds for 0/1 scores only.
    """
    if n <= 0:
        raise ValueError("wilson_interval needs n >= 1")
    if not 0.0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], got {successes} of {n}")
    z = _z(confidence)
    p = successes / n
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # Clamp: rounding can push the bounds a hair outside [0, 1] or past p at p in {0, 1}.
    return max(0.0, min(center - half, p)), min(1.0, max(center + half, p))


def bootstrap_mean_ci(
    scores: ArrayLike,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: Seed = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``scores``.

    Resampling n items with replacement is drawn as multinomial counts over the
    distinct score values, which has the same distribution as index resampling but
    costs O(n_resamples × distinct values) instead of O(n_resamples × n).
    """
    x = np.asarray(scores, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("bootstrap_mean_ci needs at least one score")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    _z(confidence)
    values, counts = np.unique(x, return_counts=True)
    n = x.size
    rng = _rng(seed)
    block = max(1, _BLOCK_ELEMS // values.size)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        draws = rng.multinomial(n, counts / n, size=stop - start)
        means[start:stop] = draws @ values / n
    alpha = 1.0 - confidence
    lo, hi = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


@dataclass(frozen=True)
class AccuracyCI:
    """Mean score with Wilson and percentile-bootstrap intervals."""

    accuracy: float
    n: int
    wilson_low: float
    wilson_high: float
    boot_low: float
    boot_high: float
    confidence: float

    def fields(self, binary: bool) -> dict[str, float | str]:
        """Summary/table columns; the headline interval is Wilson for 0/1 scores and the
        bootstrap one otherwise (partial credit, e.g. 0.25 for unparseable answers)."""
        return {
            "accuracy": self.accuracy,
            "ci_low": self.wilson_low if binary else self.boot_low,
            "ci_high": self.wilson_high if binary else self.boot_high,
            "ci_method": "wilson" if binary else "bootstrap",
            "wilson_low": self.wilson_low,
            "wilson_high": self.wilson_high,
            "boot_low": self.boot_low,
            "boot_high": self.boot_high,
        }


def score_fields(scores: ArrayLike) -> dict[str, float | str]:
    """The ``score`` columns (mean item score with the invalid credit) beside accuracy:
    ``score``, ``score_ci_low``, ``score_ci_high``, ``score_ci_method`` (Wilson while every
    score is 0 or 1, else the bootstrap)."""
    x = np.asarray(scores, dtype=np.float64).ravel()
    f = accuracy_ci(x).fields(bool(np.all((x == 0.0) | (x == 1.0))))
    return {
        "score": f["accuracy"],
        "score_ci_low": f["ci_low"],
        "score_ci_high": f["ci_high"],
        "score_ci_method": f["ci_method"],
    }


def accuracy_ci(
    scores: ArrayLike, confidence: float = 0.95, n_resamples: int = 2000, seed: Seed = 0
) -> AccuracyCI:
    """Accuracy (mean of per-item scores in [0, 1]) with a Wilson and a bootstrap CI."""
    x = np.asarray(scores, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("accuracy_ci needs at least one score")
    if np.any((x < 0.0) | (x > 1.0)):
        raise ValueError("scores must lie in [0, 1]")
    # Same arithmetic as the bootstrap means (counts @ values / n), so a constant
    # sample gives an estimate bit-identical to its degenerate bootstrap interval.
    values, counts = np.unique(x, return_counts=True)
    acc = float(counts @ values / x.size)
    w_lo, w_hi = wilson_interval(float(counts @ values), x.size, confidence)
    b_lo, b_hi = bootstrap_mean_ci(x, confidence, n_resamples, seed)
    return AccuracyCI(acc, int(x.size), w_lo, w_hi, b_lo, b_hi, confidence)


@dataclass(frozen=True)
class AnovaResult:
    """One-way ANOVA: F statistic, p-value and degrees of freedom."""

    f: float
    p_value: float
    df_between: int
    df_within: int


def anova_oneway(*groups: ArrayLike) -> AnovaResult:
    """One-way ANOVA across ``groups`` (≥ 2 groups, more observations than groups).

    If every group is constant (within sum of squares 0), F is inf with p = 0 when the
    group means differ, and nan with p = nan when they are all equal.
    """
    arrs = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    k = len(arrs)
    if k < 2 or any(a.size == 0 for a in arrs):
        raise ValueError("anova_oneway needs at least 2 non-empty groups")
    n_total = sum(a.size for a in arrs)
    if n_total <= k:
        raise ValueError("anova_oneway needs more observations than groups")
    with warnings.catch_warnings():
        # constant groups: scipy returns the inf / nan documented above, and warns
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        res = sps.f_oneway(*arrs)
    return AnovaResult(float(res.statistic), float(res.pvalue), k - 1, n_total - k)


@dataclass(frozen=True)
class Correlation:
    """Correlation coefficient with its two-sided p-value and how the p-value was found."""

    r: float
    p_value: float
    n: int
    method: str = "t approximation"


# scipy computes a perfect correlation as 1 − a few ulps and derives p ~1e-8 from that
# noise; within these ulps r is reported as exactly ±1 with p = 0.
_PERFECT = 8 * float(np.finfo(np.float64).eps)


def _correlation(
    fn: Callable[[NDArray[np.float64], NDArray[np.float64]], Any],
    x: NDArray[np.float64],
    y: NDArray[np.float64],
) -> Correlation:
    n = x.size
    with warnings.catch_warnings():
        # a constant input has no correlation: scipy returns nan (r and p) and warns
        warnings.simplefilter("ignore", sps.ConstantInputWarning)
        res = fn(x, y)
    r, p = float(res.statistic), float(res.pvalue)
    if math.isnan(r):
        return Correlation(math.nan, math.nan, n)
    if 1.0 - abs(r) <= _PERFECT:
        r, p = math.copysign(1.0, r), 0.0
    # two points always lie on a line: no evidence either way
    return Correlation(r, 1.0 if n == 2 else p, n)


def _pair(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"x and y lengths differ: {a.size} vs {b.size}")
    if a.size < 2:
        raise ValueError("correlation needs at least 2 pairs")
    return a, b


def pearson(x: ArrayLike, y: ArrayLike) -> Correlation:
    """Pearson r; p-value from the t distribution with n − 2 df (two-sided).

    n = 2 gives p = 1; a constant input gives r = p = nan.
    """
    return _correlation(sps.pearsonr, *_pair(x, y))


def spearman(x: ArrayLike, y: ArrayLike, *, exact_max_n: int = 0) -> Correlation:
    """Spearman rho: Pearson r of average ranks (ties share their mean rank), p-value
    from the t distribution with n − 2 df; n = 2 gives p = 1.

    With 2 < n <= `exact_max_n` the p-value is exact instead (method "exact"): the share of
    all n! pairings whose |rho| is at least the observed one, ties included (scipy's
    `permutation_test`), where the t approximation is poor (a panel of a few models)."""
    a, b = _pair(x, y)
    res = _correlation(sps.spearmanr, a, b)
    if not 2 < a.size <= exact_max_n or math.isnan(res.r):
        return res
    return Correlation(res.r, _exact_spearman_p(a, b), res.n, "exact")


def _exact_spearman_p(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    ry = sps.rankdata(y)
    ry = (ry - ry.mean()) / np.sqrt(((ry - ry.mean()) ** 2).sum())

    def rho_of(a: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
        """Spearman's rho of each row of `a` with y: Pearson's r of average ranks (what
        spearmanr computes), for a whole batch of permutations at once; one spearmanr call
        per permutation took ~55 s for 8 models (8! pairings)."""
        ra = sps.rankdata(a, axis=axis)
        ra = ra - ra.mean(axis=axis, keepdims=True)
        out: NDArray[np.float64] = np.sum(ra * ry, axis=axis) / np.sqrt(np.sum(ra * ra, axis=axis))
        return out

    res = sps.permutation_test(
        (x,), rho_of, permutation_type="pairings", n_resamples=math.inf, vectorized=True
    )
    return float(res.pvalue)


@dataclass(frozen=True)
class KappaResult:
    """Cohen's kappa for two raters, with bootstrap CI, raw agreement and confusion.

    ``confusion[i][j]`` counts items rater A labelled ``labels[i]`` and rater B
    labelled ``labels[j]``.
    """

    kappa: float
    ci_low: float
    ci_high: float
    agreement: float
    confusion: tuple[tuple[int, ...], ...]
    labels: tuple[object, ...]
    n: int


def _kappa_from_confusion(conf: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kappa over the last two axes of ``conf`` (…, L, L); nan where chance agreement is 1."""
    n = conf.sum(axis=(-2, -1))
    po = np.trace(conf, axis1=-2, axis2=-1) / n
    pe = (conf.sum(axis=-1) * conf.sum(axis=-2)).sum(axis=-1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


def cohen_kappa(
    rater_a: Sequence[object],
    rater_b: Sequence[object],
    labels: Sequence[object] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: Seed = 0,
) -> KappaResult:
    """Cohen's kappa (binary or multi-class) with a percentile-bootstrap CI over items.

    κ = (p_o − p_e) / (1 − p_e). When p_e = 1 (both raters used one and the same
    label throughout) κ is undefined and returned as nan; bootstrap resamples where
    that happens are dropped from the CI (all dropped → nan bounds).
    """
    a = list(rater_a)
    b = list(rater_b)
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("cohen_kappa needs at least one item")
    labs = list(labels) if labels is not None else sorted(set(a) | set(b), key=_sort_key)
    index = {lab: i for i, lab in enumerate(labs)}
    missing = (set(a) | set(b)) - index.keys()
    if missing:
        raise ValueError(f"labels not in `labels`: {sorted(missing, key=_sort_key)}")
    n_lab = len(labs)
    ia = np.fromiter((index[x] for x in a), dtype=np.intp, count=len(a))
    ib = np.fromiter((index[x] for x in b), dtype=np.intp, count=len(b))
    cell = ia * n_lab + ib
    conf = np.bincount(cell, minlength=n_lab * n_lab).reshape(n_lab, n_lab)
    kappa = float(_kappa_from_confusion(conf.astype(np.float64)))
    agreement = float(np.trace(conf) / len(a))
    lo, hi = _kappa_bootstrap(cell, n_lab, confidence, n_resamples, _rng(seed))
    confusion = tuple(tuple(int(v) for v in row) for row in conf)
    return KappaResult(kappa, lo, hi, agreement, confusion, tuple(labs), len(a))


def _sort_key(x: object) -> tuple[str, str]:
    # Labels may mix types (e.g. bool and None); sort by type name, then text.
    return type(x).__name__, str(x)


def _kappa_bootstrap(
    cell: NDArray[np.intp],
    n_lab: int,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    _z(confidence)
    n = cell.size
    cells = n_lab * n_lab
    block = max(1, _BLOCK_ELEMS // n)
    kappas = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        m = min(block, n_resamples - start)
        idx = rng.integers(0, n, size=(m, n))
        # One bincount for the whole block: offset each resample's cells by r * cells.
        flat = cell[idx] + (np.arange(m) * cells)[:, None]
        conf = np.bincount(flat.ravel(), minlength=m * cells).reshape(m, n_lab, n_lab)
        kappas[start : start + m] = _kappa_from_confusion(conf.astype(np.float64))
    ok = kappas[~np.isnan(kappas)]
    if ok.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - confidence
    lo, hi = np.quantile(ok, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def json_safe(value: Any) -> Any:
    """`value` with numpy scalars as Python numbers, NaN/inf as None and keys as str, so
    summaries and reports are strict JSON."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
