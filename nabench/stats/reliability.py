"""Classical test theory over a response matrix (models × items, scores in [0, 1]).

Conventions:

* Variances are population variances (ddof = 0) throughout. KR-20's p_i·q_i terms are
  population item variances, so the total-score variance must use the same
  convention: then k identical 0/1 items (that vary) give KR-20 = 1, and KR-20 equals
  Cronbach's alpha on 0/1 data.
* Degenerate KR-20/alpha is nan, not an error: fewer than 2 items (k/(k−1) undefined)
  or zero total-score variance (every model has the same total; also the case with
  fewer than 2 models). Per-group results thus stay usable when one group is tiny.
* Discrimination groups hold ``n_group = round_half_up(0.27 · n_models)`` models,
  at least 1 and at most ``n_models // 2``. Models are ranked by total score; models
  tied at a group boundary share the remaining places equally (fractional weights),
  so D does not depend on row order. D = (U − L) / n_group with U, L the (weighted)
  sums of item scores in the upper and lower groups, hence D ∈ [−1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "GROUP_PERCENT",
    "DiscriminationGroups",
    "cronbach_alpha",
    "discrimination_groups",
    "discrimination_index",
    "item_rest_correlation",
    "kr20",
    "kr20_by_group",
]

GROUP_PERCENT = 27  # upper/lower group size, percent of models
# Totals are compared after rounding so that float summation order can't split a tie.
_TIE_DECIMALS = 9
# Variance below this counts as zero (all totals equal up to float noise).
_VAR_EPS = 1e-12


def _matrix(responses: ArrayLike) -> NDArray[np.float64]:
    x = np.asarray(responses, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"responses must be a 2-D models × items matrix, got shape {x.shape}")
    if x.size and (np.isnan(x).any() or x.min() < 0.0 or x.max() > 1.0):
        raise ValueError("responses must be scores in [0, 1] without nan")
    return x


def _kr20_parts(
    pq_sum: float | NDArray[np.float64], k: ArrayLike, var_total: ArrayLike
) -> NDArray[np.float64]:
    k_arr = np.asarray(k, dtype=np.float64)
    var = np.asarray(var_total, dtype=np.float64)
    ok = (k_arr >= 2) & (var > _VAR_EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = k_arr / (k_arr - 1.0) * (1.0 - pq_sum / var)
    return np.where(ok, val, np.nan)


def kr20(responses: ArrayLike) -> float:
    """KR-20 = k/(k−1) · (1 − Σ p_i q_i / σ²_total), population σ²; nan if degenerate."""
    x = _matrix(responses)
    k = x.shape[1]
    if k < 2 or x.shape[0] == 0:
        return math.nan
    p = x.mean(axis=0)
    var_total = x.sum(axis=1).var()
    return float(_kr20_parts(float((p * (1.0 - p)).sum()), k, var_total))


def cronbach_alpha(responses: ArrayLike) -> float:
    """Cronbach's alpha, k/(k−1) · (1 − Σ σ²_i / σ²_total); equals KR-20 on 0/1 data.

    Prefer it for partial credit: there p_i q_i over-states the item variance.
    """
    x = _matrix(responses)
    k = x.shape[1]
    if k < 2 or x.shape[0] == 0:
        return math.nan
    return float(_kr20_parts(float(x.var(axis=0).sum()), k, x.sum(axis=1).var()))


def kr20_by_group(
    responses: ArrayLike, groups: Sequence[object] | ArrayLike
) -> dict[object, float]:
    """KR-20 of each item group (e.g. MMLU category); ``groups[j]`` labels item j.

    Keys are in order of first appearance.
    """
    x = _matrix(responses)
    g = np.asarray(groups, dtype=object)
    if g.shape != (x.shape[1],):
        raise ValueError(f"need one group label per item: {g.size} labels, {x.shape[1]} items")
    # factorize keeps labels as given (None stays a label) and hashes instead of sorting.
    inv, labels = pd.factorize(g, use_na_sentinel=False)
    uniq = list(labels)
    n_groups = len(uniq)
    if x.shape[0] == 0:
        return dict.fromkeys(uniq, math.nan)
    p = x.mean(axis=0)
    pq = np.bincount(inv, weights=p * (1.0 - p), minlength=n_groups).astype(np.float64)
    k = np.bincount(inv, minlength=n_groups).astype(np.float64)
    order = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[order], np.arange(n_groups))
    totals = np.add.reduceat(x[:, order], starts, axis=1)  # models × groups
    vals = _kr20_parts(pq, k, totals.var(axis=0))
    return {u: float(v) for u, v in zip(uniq, vals, strict=True)}


@dataclass(frozen=True)
class DiscriminationGroups:
    """Per-model weights in the upper and lower groups (each sums to ``n_group``)."""

    n_group: int
    upper: NDArray[np.float64]
    lower: NDArray[np.float64]


def _group_size(n_models: int) -> int:
    # Integer arithmetic: exact round half up of 0.27 · n (in floats 0.27 · 50 is fuzzy).
    raw = (GROUP_PERCENT * n_models + 50) // 100
    return max(1, min(raw, n_models // 2))


def _top_weights(totals: NDArray[np.float64], n_group: int) -> NDArray[np.float64]:
    cutoff = np.sort(totals)[::-1][n_group - 1]
    above = totals > cutoff
    tied = totals == cutoff
    share = (n_group - above.sum()) / tied.sum()
    return above + tied * share


def discrimination_groups(responses: ArrayLike) -> DiscriminationGroups:
    """Upper/lower 27 % groups of models by total score (see module docstring)."""
    return _groups(_matrix(responses))


def _groups(x: NDArray[np.float64]) -> DiscriminationGroups:
    if x.shape[0] < 2:
        raise ValueError("discrimination needs at least 2 models")
    totals = np.round(x.sum(axis=1), _TIE_DECIMALS)
    n_group = _group_size(x.shape[0])
    return DiscriminationGroups(
        n_group, _top_weights(totals, n_group), _top_weights(-totals, n_group)
    )


def discrimination_index(responses: ArrayLike) -> NDArray[np.float64]:
    """Per-item D = (U − L) / n_group, in [−1, 1]."""
    x = _matrix(responses)
    grp = _groups(x)
    d = (grp.upper - grp.lower) @ x / grp.n_group
    return np.clip(d, -1.0, 1.0)  # clip only float noise; exact D is within bounds


def item_rest_correlation(responses: ArrayLike) -> NDArray[np.float64]:
    """Per-item Pearson r between the item and the rest score (total minus the item).

    nan for items, or rest scores, with zero variance across models.
    """
    x = _matrix(responses)
    rest = x.sum(axis=1, keepdims=True) - x
    xc = x - x.mean(axis=0)
    rc = rest - rest.mean(axis=0)
    num = np.einsum("ij,ij->j", xc, rc)
    den = np.sqrt(np.einsum("ij,ij->j", xc, xc) * np.einsum("ij,ij->j", rc, rc))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = num / den
    return np.where(den > 0.0, np.clip(r, -1.0, 1.0), np.nan)
