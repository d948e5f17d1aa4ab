"""Paired comparisons of two configs on the same items: bootstrap CI of the drop, McNemar.

* :func:`paired_drop`: accuracy on ``original`` and on a variant over the same rows, the
  paired difference ``original − variant`` and the relative drop ``difference /
  original`` with percentile-bootstrap CIs. Resampling is over clusters (source items)
  when a config has several rows per item, else over rows. The bootstrap draws
  multinomial counts over the distinct cluster *types* (sum of original scores, sum of
  variant scores, rows), which has the same distribution as resampling clusters with
  replacement but costs O(resamples × types): 0/1 scores give at most a handful of
  types, so thousands of CIs take well under a second.
* :func:`mcnemar`: McNemar's test on the discordant counts ``b`` (original right,
  variant wrong) and ``c`` (original wrong, variant right): exact binomial when
  ``b + c < 25``, else χ² with continuity correction — the two forms of
  ``statsmodels.stats.contingency_tables.mcnemar``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

__all__ = ["EXACT_BELOW", "McNemar", "PairedDrop", "mcnemar", "paired_drop"]

EXACT_BELOW = 25  # discordant pairs below which McNemar's test is the exact binomial
_BLOCK_ELEMS = 2_000_000


@dataclass(frozen=True)
class PairedDrop:
    """Paired accuracies of original and variant, their difference and relative drop."""

    n: int
    n_clusters: int
    acc_original: float
    acc_variant: float
    diff: float
    diff_low: float
    diff_high: float
    rel_drop: float
    rel_low: float
    rel_high: float

    def fields(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "n_clusters": self.n_clusters,
            "acc_original": self.acc_original,
            "acc_variant": self.acc_variant,
            "diff": self.diff,
            "diff_low": self.diff_low,
            "diff_high": self.diff_high,
            "rel_drop": self.rel_drop,
            "rel_drop_low": self.rel_low,
            "rel_drop_high": self.rel_high,
        }


def _cluster_types(
    o: NDArray[np.float64], v: NDArray[np.float64], clusters: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
    if clusters is None:
        sums = np.column_stack([o, v, np.ones_like(o)])
    else:
        _, inv = np.unique(np.asarray(clusters), return_inverse=True)
        k = int(inv.max()) + 1
        sums = np.column_stack(
            [
                np.bincount(inv, o, minlength=k),
                np.bincount(inv, v, minlength=k),
                np.bincount(inv, minlength=k).astype(np.float64),
            ]
        )
    types, counts = np.unique(sums, axis=0, return_counts=True)
    return types, counts, int(sums.shape[0])


def _quantiles(x: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    ok = x[np.isfinite(x)]
    if ok.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - confidence
    lo, hi = np.quantile(ok, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def paired_drop(
    original: ArrayLike,
    variant: ArrayLike,
    clusters: ArrayLike | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int | np.random.Generator = 0,
) -> PairedDrop:
    """Accuracy drop original → variant over paired rows, with bootstrap CIs (see module)."""
    o = np.asarray(original, dtype=np.float64).ravel()
    v = np.asarray(variant, dtype=np.float64).ravel()
    if o.shape != v.shape or o.size == 0:
        raise ValueError("paired_drop needs two equally long, non-empty score arrays")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    types, counts, n_clusters = _cluster_types(o, v, clusters)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMS // types.shape[0])
    tot = np.empty((n_resamples, 3))
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        w = rng.multinomial(n_clusters, counts / n_clusters, size=stop - start)
        tot[start:stop] = w @ types
    with np.errstate(divide="ignore", invalid="ignore"):
        diffs = (tot[:, 0] - tot[:, 1]) / tot[:, 2]
        rels = (tot[:, 0] - tot[:, 1]) / tot[:, 0]
    acc_o, acc_v = float(o.mean()), float(v.mean())
    diff = acc_o - acc_v
    rel = diff / acc_o if acc_o > 0 else math.nan
    d_lo, d_hi = _quantiles(diffs, confidence)
    r_lo, r_hi = _quantiles(rels, confidence)
    return PairedDrop(o.size, n_clusters, acc_o, acc_v, diff, d_lo, d_hi, rel, r_lo, r_hi)


@dataclass(frozen=True)
class McNemar:
    """McNemar's test of paired 0/1 outcomes (two-sided)."""

    b: int  # original right, variant wrong
    c: int  # original wrong, variant right
    statistic: float  # exact: min(b, c); chi2: the corrected χ² statistic
    p_value: float
    method: Literal["exact", "chi2"]


def mcnemar(b: int, c: int, exact_below: int = EXACT_BELOW) -> McNemar:
    """McNemar's test on the discordant counts (see module docstring)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n < exact_below:
        k = min(b, c)
        p = 1.0 if n == 0 else min(1.0, 2.0 * float(sps.binom.cdf(k, n, 0.5)))
        return McNemar(b, c, float(k), p, "exact")
    stat = (abs(b - c) - 1.0) ** 2 / n
    return McNemar(b, c, float(stat), float(sps.chi2.sf(stat, 1)), "chi2")
