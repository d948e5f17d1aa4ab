"""Multiple-comparison corrections: Holm (family-wise error) and Benjamini–Hochberg (FDR).

A report runs one McNemar test per subject × variant × model; at α = .05 about one in
twenty null subjects comes out "significant" by chance. The adjusted p-values here are
the ones ``statsmodels.stats.multitest.multipletests`` gives for ``holm`` and
``fdr_bh`` (tests check it); BH comes from ``scipy.stats.false_discovery_control``
(scipy is a runtime dependency, statsmodels only a dev one). Undefined p-values (nan)
are not tests: they stay nan and do not count in the family size.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

__all__ = ["FDR_Q", "adjust_by_family", "bh_adjust", "holm_adjust"]

FDR_Q = 0.05  # the false discovery rate behind the `significant_fdr` flag


def _valid(p: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    x = np.asarray(p, dtype=np.float64).ravel()
    ok = ~np.isnan(x)
    if np.any((x[ok] < 0.0) | (x[ok] > 1.0)):
        raise ValueError("p-values must lie in [0, 1]")
    return x, ok


def holm_adjust(p: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values: sorted ascending, p_(i) × (m − i + 1), made
    monotone by a running maximum and capped at 1."""
    x, ok = _valid(p)
    out = np.full(x.shape, np.nan)
    m = int(ok.sum())
    if m == 0:
        return out
    v = x[ok]
    order = np.argsort(v, kind="stable")
    scaled = np.minimum(1.0, v[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    out[ok] = adjusted
    return out


def bh_adjust(p: ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values (q-values under independence or PRDS)."""
    x, ok = _valid(p)
    out = np.full(x.shape, np.nan)
    if ok.any():
        out[ok] = sps.false_discovery_control(x[ok], method="bh")
    return out


def adjust_by_family(
    p: ArrayLike, family: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Holm and BH adjusted p-values, each computed within its family (rows sharing a
    ``family`` label), in the input order."""
    x, _ = _valid(p)
    fam = np.asarray(family).ravel()
    if fam.shape != x.shape:
        raise ValueError("p-values and family labels differ in length")
    holm = np.full(x.shape, np.nan)
    bh = np.full(x.shape, np.nan)
    for label in dict.fromkeys(fam.tolist()):
        idx = np.flatnonzero(fam == label)
        holm[idx] = holm_adjust(x[idx])
        bh[idx] = bh_adjust(x[idx])
    return holm, bh
