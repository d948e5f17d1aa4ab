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
the MDE by several points at small n). ``bench/power_sim.py`` and the tests check it
against simulated McNemar power. Below 25 discordant pairs the report uses the exact
binomial test, where the normal approximation is rougher.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

__all__ = ["ALPHA", "POWER", "discordance", "mde", "mde_of_counts", "planned_mde"]

ALPHA = 0.05
POWER = 0.80


def discordance(acc: ArrayLike, rho: ArrayLike = 0.0, drop: ArrayLike = 0.0) -> NDArray[np.float64]:
    """ψ: the discordant share of pairs with original accuracy ``acc``, variant accuracy
    ``acc − drop`` and outcome correlation ``rho``. At ``drop`` 0 it is 2 p (1 − p)(1 − ρ)."""
    p = np.asarray(acc, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64)
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("accuracy must lie in [0, 1]")
    if np.any((r < -1.0) | (r > 1.0)):
        raise ValueError("rho must lie in [-1, 1]")
    q = np.clip(p - np.asarray(drop, dtype=np.float64), 0.0, 1.0)
    both = p * q + r * np.sqrt(p * (1.0 - p) * q * (1.0 - q))
    return p + q - 2.0 * both


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
    outcome correlation ``rho`` (the variant's accuracy is ``acc`` minus the drop)."""
    discordance(acc, rho)  # validates the ranges
    return _solve(np.asarray(n, dtype=np.float64), lambda d: discordance(acc, rho, d), alpha, power)


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
