"""Power of the paired McNemar test: the minimum detectable drop (MDE).

For n paired 0/1 outcomes with discordance ψ (the share of pairs where exactly one of
original and variant is correct), the corrected McNemar statistic rejects at level α
when |b − c| − 1 > z_{1−α/2} √(b + c), i.e. when the observed drop d = (b − c)/n exceeds
z_{1−α/2} √(ψ/n) + 1/n. A true drop δ gives d ≈ Normal(δ, (ψ − δ²)/n), so the drop
detected with probability ``power`` solves

    δ = z_{1−α/2} √(ψ/n) + 1/n + z_{power} √((ψ − δ²)/n),

with ψ the discordance *under that drop*: for a table row, the observed one; for
planning from an accuracy p and the correlation ρ of an item's original and variant
outcomes, the discordance of accuracies p and p − δ at correlation ρ (a larger drop
means more discordant pairs; using the null's 2 p (1 − p)(1 − ρ) instead understates
the MDE by several points at small n).

That normal approximation is good for large n but not for a subject's 70-300 items with
correlated outcomes: there the discordant pairs are few, the report's test is the exact
binomial below 25 of them, and the formula's drop has 84-92 % power, not 80 %. So up to
``EXACT_MAX_N`` (400) items the MDE solves the *exact* power of the report's test
(:func:`mcnemar_power`: the number D of discordant pairs is Binomial(n, ψ), the
orig-only count given D is Binomial(D, π), and the test rejects where ``mcnemar_many``
does) for the drop with power ``power``; above it the formula is within 3 points
(simulated: 78-82.5 % over accuracies .3-.9, ρ 0-.6 and 400-5,700 items).
``bench/power_sim.py`` and the tests check both against simulated McNemar power.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special as spc
from scipy import stats as sps

from nabench.stats.paired import mcnemar_many

__all__ = [
    "ALPHA",
    "EXACT_MAX_N",
    "POWER",
    "discordance",
    "mcnemar_power",
    "mde",
    "mde_of_counts",
    "planned_mde",
    "rho_bounds",
]

ALPHA = 0.05
POWER = 0.80
EXACT_MAX_N = 400  # up to this many items the MDE solves the test's exact power
_TAIL = 1e-8  # discordant counts outside these Binomial(n, ψ) tails are left out of the sum
_STEPS = 40  # at most this many false-position steps for the exact MDE
_TOL = 1e-6  # ... stopping once the bracket or the power gap is below this


def discordance(acc: ArrayLike, rho: ArrayLike = 0.0, drop: ArrayLike = 0.0) -> NDArray[np.float64]:
    """ψ: the discordant share of pairs with original accuracy ``acc``, variant accuracy
    ``acc − drop`` and outcome correlation ``rho``. At ``drop`` 0 it is 2 p (1 − p)(1 − ρ)."""
    p = np.asarray(acc, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64)
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("accuracy must lie in [0, 1]")
    if np.any((r < -1.0) | (r > 1.0)):
        raise ValueError("rho must lie in [-1, 1]")
    # the cells the exact power uses: a rho outside the Fréchet bounds gave ψ < |drop| here
    orig_only, variant_only = _cells(p, r, np.asarray(drop, dtype=np.float64))
    return orig_only + variant_only


def rho_bounds(acc: float, variant: float) -> tuple[float, float]:
    """The Fréchet bounds: the correlations two 0/1 outcomes of accuracies ``acc`` and
    ``variant`` can have (P(both) in [max(0, acc + variant − 1), min(acc, variant)]);
    (-1, 1) where one is constant (no correlation is defined, none is refused)."""
    sd = float(np.sqrt(acc * (1.0 - acc) * variant * (1.0 - variant)))
    if sd == 0.0:
        return -1.0, 1.0
    both = acc * variant
    return (max(0.0, acc + variant - 1.0) - both) / sd, (min(acc, variant) - both) / sd


def _solve(
    n: NDArray[np.float64], psi: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    alpha: float, power: float,
) -> NDArray[np.float64]:  # fmt: skip
    """The fixed point of the MDE equation (module docstring); it converges in a few
    steps because ψ changes slowly with δ."""
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0):
        raise ValueError("alpha and power must lie in (0, 1)")
    za, zb = float(sps.norm.ppf(1.0 - alpha / 2.0)), float(sps.norm.ppf(power))
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.zeros(np.broadcast(n, psi(np.zeros(()))).shape)
        for _ in range(50):
            s = psi(delta)
            delta = za * np.sqrt(s / n) + 1.0 / n + zb * np.sqrt(np.maximum(s - delta**2, 0.0) / n)
        return np.where(n >= 1, delta, np.nan)


def _critical(d_max: int, alpha: float) -> NDArray[np.int64]:
    """Per number D of discordant pairs (0..``d_max``), the largest min(b, c) at which the
    report's McNemar test (``mcnemar_many``) rejects at ``alpha``; -1 where none does. The
    corrected χ² rejects where D − 2k − 1 > z √D; that candidate is checked against
    ``mcnemar_many`` itself (and the exact test below 25 pairs), so both agree."""
    d = np.arange(d_max + 1, dtype=np.int64)
    z = float(sps.norm.isf(alpha / 2.0))
    k = np.clip(np.ceil((d - 1.0 - z * np.sqrt(d)) / 2.0).astype(np.int64) - 1, -1, d // 2)
    for _ in range(d_max + 2):  # the candidate is right or off by a step near the cut
        _, p_k, _ = mcnemar_many(np.maximum(k, 0), d - np.maximum(k, 0))
        down = (k >= 0) & (p_k >= alpha)
        nxt = np.minimum(k + 1, d // 2)
        _, p_n, _ = mcnemar_many(nxt, d - nxt)
        up = ~down & (nxt > k) & (p_n < alpha)
        if not (down.any() or up.any()):
            return k
        k = np.where(down, k - 1, np.where(up, nxt, k))
    raise AssertionError("critical values did not settle")  # pragma: no cover


def _log_pmf(k: NDArray[np.float64], d: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[
    np.float64
]:  # fmt: skip
    """log Binomial(d, p) pmf at k (-inf outside 0..d)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (spc.gammaln(d + 1) - spc.gammaln(k + 1) - spc.gammaln(d - k + 1)
               + spc.xlogy(k, p) + spc.xlog1py(d - k, -p))  # fmt: skip
    return np.where((k >= 0) & (k <= d), out, -np.inf)


def _lower_tails(
    k: NDArray[np.int64], d0: NDArray[np.float64], p: NDArray[np.float64]
) -> NDArray[np.float64]:
    """P(X_D ≤ k[:, j]) for X_D ~ Binomial(D, p), D = d0 + j, per row: one cdf and pmf at
    D = d0, then P(X_{D+1} ≤ k) = P(X_D ≤ k) − p P(X_D = k), with the pmf carried in logs
    (f(k; D+1) = f(k; D) (D+1)/(D+1−k) (1−p); f(k+1; D) = f(k; D) (D−k)/(k+1) p/(1−p)) as
    k grows with D: a cdf call per cell costs a microsecond, and a report has ~10^5."""
    rows, width = k.shape
    out = np.empty((rows, width))
    kk = k[:, 0].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        start = spc.bdtr(np.maximum(k[:, 0], 0), d0.astype(np.int64), p)  # ints: no deprecation
        cur = np.where(kk >= 0, start, 0.0)
        logf = _log_pmf(kk, d0, p)  # log P(X_D = kk)
        lp, lq = np.log(p), np.log1p(-p)
        out[:, 0] = cur
        for j in range(1, width):
            d = d0 + (j - 1)
            cur = cur - p * np.exp(logf)  # the same k, one more trial
            logf = np.where(kk >= 0, logf + np.log((d + 1) / (d + 1 - kk)) + lq, -np.inf)
            target = k[:, j].astype(np.float64)
            while np.any(kk < target):  # k rises by 0 or 1 per trial
                step = kk < target
                up = np.where(
                    kk >= 0,
                    logf + np.log((d + 1 - kk) / (kk + 1)) + lp - lq,
                    (d + 1) * lq,  # f(0; D) = (1 − p)^D
                )
                kk = np.where(step, kk + 1.0, kk)
                logf = np.where(step, up, logf)
                cur = cur + np.where(step, np.exp(logf), 0.0)
            out[:, j] = np.clip(cur, 0.0, 1.0)
    return out


def mcnemar_power(
    n: ArrayLike, orig_only: ArrayLike, variant_only: ArrayLike, alpha: float = ALPHA
) -> NDArray[np.float64]:
    """Exact power of the report's two-sided McNemar test over ``n`` pairs whose cell
    probabilities are ``orig_only`` (original right, variant wrong) and ``variant_only``:
    the sum over D ~ Binomial(n, ψ) of P(min(b, c) ≤ k_D | D), b | D ~ Binomial(D, π)."""
    shape = np.broadcast(n, orig_only, variant_only).shape
    nn, pb, pc = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape).ravel() for x in
                  (n, orig_only, variant_only))  # fmt: skip
    psi = np.clip(pb + pc, 0.0, 1.0)
    lo = np.nan_to_num(sps.binom.ppf(_TAIL, nn, psi), nan=0.0)
    hi = np.maximum(np.nan_to_num(sps.binom.isf(_TAIL, nn, psi), nan=0.0), lo)
    width = int(np.max(hi - lo, initial=0.0)) + 1
    d = np.minimum(lo[:, None] + np.arange(width)[None, :], nn[:, None])
    inside = d <= hi[:, None]
    k = _critical(int(np.max(nn, initial=0.0)), alpha)[d.astype(np.int64)]
    pi = np.where(psi > 0, pb / np.where(psi > 0, psi, 1.0), 0.5)
    pi = np.clip(pi, 1e-12, 1.0 - 1e-12)  # the tails' log recurrence needs 0 < π < 1
    reject = _lower_tails(k, lo, pi) + _lower_tails(k, lo, 1.0 - pi)  # disjoint: 2 k_D < D
    weight = np.exp(_log_pmf(d, nn[:, None], psi[:, None]))
    power = np.sum(np.where(inside & (k >= 0), weight * reject, 0.0), axis=1)
    return power.reshape(shape)


def _cells(acc: NDArray[np.float64], rho: NDArray[np.float64], drop: NDArray[np.float64]) -> tuple[
    NDArray[np.float64], NDArray[np.float64]
]:  # fmt: skip
    """(orig-only, variant-only) cell probabilities at accuracies ``acc``, ``acc − drop``
    and outcome correlation ``rho`` (clipped to the cells a joint distribution allows)."""
    q = np.clip(acc - drop, 0.0, 1.0)
    both = acc * q + rho * np.sqrt(acc * (1.0 - acc) * q * (1.0 - q))
    both = np.clip(both, np.maximum(0.0, acc + q - 1.0), np.minimum(acc, q))
    return acc - both, q - both


def _exact_mde(
    n: NDArray[np.float64], acc: NDArray[np.float64], rho: NDArray[np.float64],
    guess: NDArray[np.float64], alpha: float, power: float,
) -> NDArray[np.float64]:  # fmt: skip
    """The drop whose exact power (:func:`mcnemar_power`) is ``power`` (power grows with
    the drop), by the Illinois false-position method from the bracket [0.5, 1.2] × the
    normal formula's drop ``guess`` (or [0, acc] where that does not bracket it); ``acc``
    where even a drop to accuracy 0 has less power."""

    def gap(drop: NDArray[np.float64], rows: NDArray[np.bool_] | slice = slice(None)) -> NDArray[
        np.float64
    ]:  # fmt: skip
        cells = _cells(acc[rows], rho[rows], drop)
        return mcnemar_power(n[rows], *cells, alpha) - power

    top = gap(acc)
    low, high = np.minimum(0.5 * guess, acc), np.minimum(1.2 * guess, acc)
    f_low, f_high = gap(low), gap(high)
    wide = ~(np.isfinite(guess) & (f_low < 0) & (f_high >= 0))
    low, high = np.where(wide, 0.0, low), np.where(wide, acc, high)
    f_low, f_high = np.where(wide, -power, f_low), np.where(wide, top, f_high)
    side = np.zeros(acc.shape, dtype=np.int8)  # which end moved last (Illinois)
    active = top >= 0  # rows still being solved
    for _ in range(_STEPS):
        if not active.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = high - f_high * (high - low) / (f_high - f_low)
        mid = np.where(np.isfinite(mid) & (mid > low) & (mid < high), mid, (low + high) / 2)
        f_mid = np.zeros_like(mid)
        f_mid[active] = gap(mid[active], active)
        up = active & (f_mid >= 0)  # the MDE lies at or below mid
        down = active & ~up
        f_low = np.where(up & (side == 1), f_low / 2.0, f_low)
        f_high = np.where(down & (side == -1), f_high / 2.0, f_high)
        high, f_high = np.where(up, mid, high), np.where(up, f_mid, f_high)
        low, f_low = np.where(down, mid, low), np.where(down, f_mid, f_low)
        side = np.where(up, 1, np.where(down, -1, side)).astype(np.int8)
        active &= (high - low >= _TOL) & (np.abs(f_mid) >= _TOL)
    return np.where(top >= 0, high, acc)


def mde(
    n: ArrayLike, discordant: ArrayLike, alpha: float = ALPHA, power: float = POWER
) -> NDArray[np.float64]:
    """Minimum detectable drop (absolute, as a share) of the two-sided McNemar test over
    ``n`` pairs whose discordant share is ``discordant`` (e.g. observed); nan for n < 1."""
    psi = np.asarray(discordant, dtype=np.float64)
    return _solve(np.asarray(n, dtype=np.float64), lambda _d: psi, alpha, power)


def planned_mde(
    n: ArrayLike, acc: ArrayLike, rho: ArrayLike = 0.0, alpha: float = ALPHA,
    power: float = POWER,
) -> NDArray[np.float64]:  # fmt: skip
    """Minimum detectable drop for planning: ``n`` items, original accuracy ``acc``,
    outcome correlation ``rho`` (the variant's accuracy is ``acc`` minus the drop). Up to
    ``EXACT_MAX_N`` items: the drop with exact power ``power`` (module docstring); ``acc``
    where no drop reaches it; nan for n < 1."""
    discordance(acc, rho)  # validates the ranges
    nn = np.asarray(n, dtype=np.float64)
    approx = _solve(nn, lambda d: discordance(acc, rho, d), alpha, power)
    shape = approx.shape
    flat = (nn, np.asarray(acc, np.float64), np.asarray(rho, np.float64), approx)
    nb, pb, rb, out = (np.broadcast_to(x, shape).ravel().astype(np.float64) for x in flat)
    small = (nb >= 1) & (nb <= EXACT_MAX_N)
    if small.any():
        out[small] = _exact_mde(nb[small], pb[small], rb[small], out[small], alpha, power)
    return out.reshape(shape)


def mde_of_counts(
    both_correct: ArrayLike, orig_only: ArrayLike, variant_only: ArrayLike, both_wrong: ArrayLike
) -> NDArray[np.float64]:
    """Per table row, the MDE for the items present: :func:`planned_mde` at the row's
    n, original accuracy (share correct) and outcome correlation (phi of the 2 × 2
    counts; 0 where a margin is empty, the conservative choice). nan where the MDE is
    not below the accuracy: no drop these items allow is detectable."""
    cells = (both_correct, orig_only, variant_only, both_wrong)
    a, b, c, d = (np.asarray(x, dtype=np.float64) for x in cells)
    n = a + b + c + d
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (a + b) / n
        phi = (a * d - b * c) / np.sqrt((a + b) * (c + d) * (a + c) * (b + d))
        rho = np.where(np.isfinite(phi), np.clip(phi, -1.0, 1.0), 0.0)
        m = planned_mde(n, np.where(n > 0, p, 0.0), rho)
    return np.where(m < p, m, np.nan)
