"""Paired comparisons of two configs on the same items: bootstrap CI of the drop, McNemar.

* :func:`paired_drop`: accuracy on ``original`` and on a variant over the same rows, the
  paired difference ``original − variant`` and the relative drop ``difference /
  original`` with percentile-bootstrap CIs. Resampling is over clusters (source items)
  when a config has several rows per item, else over rows. The bootstrap draws
  multinomial counts over the distinct cluster *types* (sum of original scores, sum of
  variant scores, rows), which has the same distribution as resampling clusters with
  replacement but costs O(resamples × types): 0/1 scores give at most a handful of
  types, so thousands of CIs take well under a second. With one cluster there is nothing
  to resample (every resample is the sample): the CIs are nan, not a zero-width interval.
* :func:`mcnemar`: McNemar's test on the discordant counts ``b`` (original right,
  variant wrong) and ``c`` (original wrong, variant right): exact binomial when
  ``b + c < 25``, else χ² with continuity correction — the two forms of
  ``statsmodels.stats.contingency_tables.mcnemar``.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

__all__ = [
    "EXACT_BELOW",
    "FIELDS",
    "McNemar",
    "PairedDrop",
    "clustered_drop_test",
    "mcnemar",
    "paired_drop",
    "paired_drops",
]

EXACT_BELOW = 25  # discordant pairs below which McNemar's test is the exact binomial


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


FIELDS = tuple(f.name for f in dataclasses.fields(PairedDrop))


def _codes(*columns: NDArray[Any]) -> NDArray[np.int64]:
    """Dense codes of the distinct tuples of ``columns`` (factorize each, then combine)."""
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        c, uniq = pd.factorize(col)
        code = pd.factorize(code * len(uniq) + c)[0].astype(np.int64)
    return code


def _clusters(
    o: NDArray[np.float64], v: NDArray[np.float64], g: NDArray[np.int64], clusters: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per cluster (within its group): [Σ original, Σ variant, rows] and its group."""
    if clusters is None:  # every row its own cluster
        return np.column_stack([o, v, np.ones_like(o)]), g
    key = _codes(g, np.asarray(clusters))
    k = int(key.max()) + 1
    sums = np.column_stack(
        [np.bincount(key, o, k), np.bincount(key, v, k), np.bincount(key, minlength=k) * 1.0]
    )
    group = np.empty(k, dtype=np.int64)
    group[key] = g
    return sums, group


def _quantiles(x: NDArray[np.float64], confidence: float) -> NDArray[np.float64]:
    """Per column (group): the percentile interval, ignoring non-finite resamples."""
    alpha = 1.0 - confidence
    q = [alpha / 2.0, 1.0 - alpha / 2.0]
    bad = ~np.isfinite(x)
    if not bad.any():
        return np.quantile(x, q, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan columns give nan
        return np.nanquantile(np.where(bad, np.nan, x), q, axis=0)


def _paired_arrays(
    original: ArrayLike, variant: ArrayLike, groups: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """The scores and group codes as flat arrays, checked to pair up row by row."""
    o = np.asarray(original, dtype=np.float64).ravel()
    v = np.asarray(variant, dtype=np.float64).ravel()
    g = np.asarray(groups, dtype=np.int64).ravel()
    if not (o.shape == v.shape == g.shape) or o.size == 0:
        raise ValueError("paired_drop needs two equally long, non-empty score arrays")
    return o, v, g


def paired_drops(
    original: ArrayLike,
    variant: ArrayLike,
    groups: ArrayLike,
    clusters: ArrayLike | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int | np.random.Generator = 0,
) -> dict[str, NDArray[Any]]:
    """:func:`paired_drop` for every group at once: ``groups`` holds a group code
    (0 … G−1) per row; returns one array of length G per :data:`FIELDS` name. With an
    integer ``seed`` each group's CI is the one :func:`paired_drop` gives it alone."""
    o, v, g = _paired_arrays(original, variant, groups)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n_groups = int(g.max()) + 1
    sums, cgroup = _clusters(o, v, g, clusters)
    tcode = _codes(sums[:, 0], sums[:, 1], sums[:, 2])
    n_types = int(tcode.max()) + 1
    types = np.zeros((n_types, 3))
    types[tcode] = sums
    # types in sorted order, not in order of appearance: a group's draw then sees its types
    # in one order whatever the other groups hold
    order = np.lexsort(types.T[::-1])
    rank = np.empty(n_types, np.int64)
    rank[order] = np.arange(n_types)
    types, tcode = types[order], rank[tcode]
    counts = np.bincount(cgroup * n_types + tcode, minlength=n_groups * n_types)
    counts = counts.reshape(n_groups, n_types)
    n = np.bincount(g, minlength=n_groups)
    acc_o = np.bincount(g, o, n_groups) / n
    acc_v = np.bincount(g, v, n_groups) / n
    out: dict[str, NDArray[Any]] = {"n": n, "n_clusters": counts.sum(axis=1),
                                    "acc_original": acc_o, "acc_variant": acc_v,
                                    "diff": acc_o - acc_v}  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        out["rel_drop"] = np.where(acc_o > 0, (acc_o - acc_v) / acc_o, np.nan)
    ci = np.full((n_groups, 4), np.nan)
    for k in range(n_groups):
        # a fresh stream per group (a seed given): a row's CI depends on its own rows, not
        # on the runs and configs reported beside it
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        present = np.flatnonzero(counts[k])
        c = counts[k, present]
        if c.sum() < 2:  # one item: its "interval" [d, d] would claim certainty
            continue
        # one multinomial draw per resample over this group's cluster types
        w = rng.multinomial(int(c.sum()), c / c.sum(), size=n_resamples)
        tot = w @ types[present]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (tot[:, 0] - tot[:, 1]) / tot[:, 2]
            r = (tot[:, 0] - tot[:, 1]) / tot[:, 0]
        ci[k, :2] = _quantiles(d, confidence)
        ci[k, 2:] = _quantiles(r, confidence)
    lo = dict(zip(("diff_low", "diff_high", "rel_low", "rel_high"), ci.T, strict=True))
    return {**out, **lo}


def _cluster_se(
    o: NDArray[np.float64], v: NDArray[np.float64], g: NDArray[np.int64], clusters: ArrayLike | None
) -> dict[str, NDArray[Any]]:
    """Per group: totals, the difference, the relative drop and their cluster-robust (CR1:
    scale G / (G − 1) over G clusters) standard errors, the relative drop's by the delta
    method. One implementation behind every normal-approximation interval of a drop."""
    n_groups = int(g.max()) + 1
    sums, cg = _clusters(o, v, g, clusters)
    n_cl = np.bincount(cg, minlength=n_groups)
    tot = np.column_stack([np.bincount(cg, sums[:, i], n_groups) for i in range(3)])
    diff = (tot[:, 0] - tot[:, 1]) / tot[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(tot[:, 0] > 0, (tot[:, 0] - tot[:, 1]) / tot[:, 0], np.nan)
        scale = np.where(n_cl > 1, n_cl / (n_cl - 1.0), np.nan)
        e_d = (sums[:, 0] - sums[:, 1]) - diff[cg] * sums[:, 2]
        se_d = np.sqrt(scale * np.bincount(cg, e_d**2, n_groups)) / tot[:, 2]
        e_r = (sums[:, 0] - sums[:, 1]) - rel[cg] * sums[:, 0]
        se_r = np.sqrt(scale * np.bincount(cg, e_r**2, n_groups)) / tot[:, 0]
    return {"tot": tot, "n_clusters": n_cl, "diff": diff, "se": se_d, "rel": rel, "se_rel": se_r}


def paired_drops_normal(
    original: ArrayLike,
    variant: ArrayLike,
    groups: ArrayLike,
    clusters: ArrayLike | None = None,
    confidence: float = 0.95,
) -> dict[str, NDArray[Any]]:
    """Like :func:`paired_drops`, with normal-approximation CIs: cluster-robust standard
    errors of the difference and (delta method) of the relative drop. Vectorised over
    groups; the report uses it for the many per-subject rows."""
    o, v, g = _paired_arrays(original, variant, groups)
    z = float(sps.norm.ppf(0.5 + confidence / 2.0))
    cr = _cluster_se(o, v, g, clusters)
    tot, diff, rel, se_d, se_r = cr["tot"], cr["diff"], cr["rel"], cr["se"], cr["se_rel"]
    return {
        "n": tot[:, 2].astype(np.int64), "n_clusters": cr["n_clusters"],
        "acc_original": tot[:, 0] / tot[:, 2], "acc_variant": tot[:, 1] / tot[:, 2],
        "diff": diff, "diff_low": np.maximum(diff - z * se_d, -1.0),
        "diff_high": np.minimum(diff + z * se_d, 1.0),
        "rel_drop": rel, "rel_low": rel - z * se_r, "rel_high": rel + z * se_r,
    }  # fmt: skip


def clustered_drop_test(
    original: ArrayLike,
    variant: ArrayLike,
    groups: ArrayLike,
    clusters: ArrayLike,
    confidence: float = 0.95,
) -> dict[str, NDArray[Any]]:
    """Per group: the difference's cluster-robust interval and two-sided p-value (Wald
    test of no drop), for rows that are not independent (items of one subject share
    its difficulty and its reaction to a variant). The reference distribution is t with
    G − 1 degrees of freedom over G clusters, the usual small-G correction: a category
    has only a dozen or so subjects. Fewer than 2 clusters: nan."""
    o, v, g = _paired_arrays(original, variant, groups)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    cr = _cluster_se(o, v, g, clusters)
    diff, se, n_cl = cr["diff"], cr["se"], cr["n_clusters"]
    df = np.where(n_cl > 1, n_cl - 1.0, np.nan)
    q = sps.t.ppf(0.5 + confidence / 2.0, df)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(diff) / se, np.where(diff == 0, 0.0, np.inf))
    p = np.where(np.isnan(df), np.nan, 2.0 * sps.t.sf(t, df))
    return {
        "diff": diff, "se": se, "n_clusters": n_cl, "p_value": p,
        "low": np.maximum(diff - q * se, -1.0), "high": np.minimum(diff + q * se, 1.0),
    }  # fmt: skip


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
    res = paired_drops(o, variant, np.zeros(o.size, np.int64), clusters, confidence,
                       n_resamples, seed)  # fmt: skip
    values = {k: res[k][0].item() for k in FIELDS}
    return PairedDrop(**values)


@dataclass(frozen=True)
class McNemar:
    """McNemar's test of paired 0/1 outcomes (two-sided)."""

    b: int  # original right, variant wrong
    c: int  # original wrong, variant right
    statistic: float  # exact: min(b, c); chi2: the corrected χ² statistic
    p_value: float
    method: Literal["exact", "chi2"]


def mcnemar_many(
    b: ArrayLike, c: ArrayLike, exact_below: int = EXACT_BELOW
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """:func:`mcnemar` over arrays of counts: (statistic, p-value, exact?) arrays."""
    bb = np.asarray(b, dtype=np.int64)
    cc = np.asarray(c, dtype=np.int64)
    n = bb + cc
    exact = n < exact_below
    k = np.minimum(bb, cc)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi = (np.abs(bb - cc) - 1.0) ** 2 / n
    p_exact = np.where(n == 0, 1.0, np.minimum(1.0, 2.0 * sps.binom.cdf(k, n, 0.5)))
    p = np.where(exact, p_exact, sps.chi2.sf(np.where(exact, 0.0, chi), 1))
    return np.where(exact, k * 1.0, chi), p, exact


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
