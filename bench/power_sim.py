"""Proof by simulation: the report's tests keep their error rates on clustered data.

Three checks, each over simulated panels drawn with numpy and tested with the report's
own code (``nabench.stats``: McNemar, the cluster-robust drop test, BH):

1. Type-I error at α = .05 on clustered null panels: 57 subjects × ``per`` items, a
   subject-level random effect on accuracy (logit scale) and an item-level one, no
   drop (original and variant draw from the same per-item probability). Reported for
   the headline McNemar test and for the subject-clustered test (``cl_p``); and, where
   the variant's effect differs by subject with mean zero, for the clustered test, the
   one whose null is "no drop on average over subjects".
2. False discovery rate of BH (``significant_fdr``) over a family of 57 subjects, a
   share of them with a true drop.
3. Simulated McNemar power at the minimum detectable drop (``nabench power``), for a
   benchmark's size and for a subject's.

Usage: python bench/power_sim.py [--panels 2000] [--per 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from nabench.stats.multitest import FDR_Q, adjust_by_family
from nabench.stats.paired import clustered_drop_test, mcnemar_many
from nabench.stats.power import planned_mde

ALPHA = 0.05
SUBJECTS = 57
DROP_LOGIT = 1.5  # a true subject drop in the BH check: accuracy 0.60 → 0.25 at the mean


def correlated_pairs(
    rng: np.random.Generator, shape: tuple[int, ...], p_o: float, p_v: float, rho: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """0/1 original and variant outcomes with accuracies ``p_o``, ``p_v`` and outcome
    correlation ``rho`` (the joint cell probabilities of two correlated Bernoullis)."""
    p11 = p_o * p_v + rho * np.sqrt(p_o * (1 - p_o) * p_v * (1 - p_v))
    cells = np.array([p11, p_o - p11, p_v - p11])
    if np.any(cells < 0) or cells.sum() > 1:
        raise ValueError("no joint distribution has these accuracies and this correlation")
    u = rng.random(shape)
    both, only_o, only_v = np.cumsum(cells)
    return u < only_o, (u < both) | ((u >= only_o) & (u < only_v))


def mcnemar_power(
    n: int, acc: float, rho: float, drop: float, panels: int = 4000, seed: int = 0
) -> float:
    """Share of ``panels`` panels of ``n`` paired items (original accuracy ``acc``,
    variant ``acc − drop``, correlation ``rho``) where McNemar rejects at α = .05."""
    o, v = correlated_pairs(np.random.default_rng(seed), (panels, n), acc, acc - drop, rho)
    _, p, _ = mcnemar_many((o & ~v).sum(1), (~o & v).sum(1))
    return float((p < ALPHA).mean())


def clustered_panels(
    rng: np.random.Generator, panels: int, per: int, sd_drop: float = 0.0,
    drops: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:  # fmt: skip
    """(panels, subjects, per) outcomes: logit accuracy = 0.4 + subject effect (sd 1) +
    item effect (sd 1); the variant adds a per-subject logit shift ~ N(0, ``sd_drop``)
    (mean zero: no drop on average) minus ``drops`` (a true drop per subject)."""
    subj = rng.normal(0.0, 1.0, (panels, SUBJECTS, 1))
    item = rng.normal(0.0, 1.0, (panels, SUBJECTS, per))
    logit = 0.4 + subj + item
    shift = rng.normal(0.0, sd_drop, (panels, SUBJECTS, 1)) if sd_drop else 0.0
    if drops is not None:
        shift = shift - drops[None, :, None]
    o = rng.random(logit.shape) < 1.0 / (1.0 + np.exp(-logit))
    v = rng.random(logit.shape) < 1.0 / (1.0 + np.exp(-(logit + shift)))
    return o, v


def overall_rejections(o: NDArray[np.bool_], v: NDArray[np.bool_]) -> dict[str, float]:
    """Per panel, the overall drop tested by McNemar and by the subject-clustered test:
    the share of panels each rejects at α."""
    panels, subjects, per = o.shape
    b = (o & ~v).sum((1, 2))
    c = (~o & v).sum((1, 2))
    _, p_mc, _ = mcnemar_many(b, c)
    panel = np.repeat(np.arange(panels), subjects * per)
    subject = np.tile(np.repeat(np.arange(subjects), per), panels)
    cl = clustered_drop_test(o.ravel() * 1.0, v.ravel() * 1.0, panel, subject, 1 - ALPHA)
    return {
        "mcnemar": float((p_mc < ALPHA).mean()),
        "clustered": float((cl["p_value"] < ALPHA).mean()),
    }


def bh_fdr(
    rng: np.random.Generator, panels: int, per: int, share: float = 0.2
) -> tuple[float, float]:
    """BH over each panel's 57 per-subject McNemar tests, ``share`` of subjects with a true
    drop (logit −DROP_LOGIT): the false discovery rate and the power of the flag."""
    n_true = round(share * SUBJECTS)
    drops = np.r_[np.full(n_true, DROP_LOGIT), np.zeros(SUBJECTS - n_true)]
    o, v = clustered_panels(rng, panels, per, drops=drops)
    _, p, _ = mcnemar_many((o & ~v).sum(2).ravel(), (~o & v).sum(2).ravel())
    _, bh = adjust_by_family(p, np.repeat(np.arange(panels), SUBJECTS))
    flagged = (bh < FDR_Q).reshape(panels, SUBJECTS)
    false = flagged[:, n_true:].sum(1)
    fdp = false / np.maximum(flagged.sum(1), 1)
    return float(fdp.mean()), float(flagged[:, :n_true].mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panels", type=int, default=2000)
    ap.add_argument("--per", type=int, default=40, help="items per subject")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    t0 = time.perf_counter()
    null = overall_rejections(*clustered_panels(rng, a.panels, a.per))
    het = overall_rejections(*clustered_panels(rng, a.panels, a.per, sd_drop=0.3))
    print(f"{a.panels} panels, {SUBJECTS} subjects x {a.per} items, alpha {ALPHA}")
    print(f"type-I, shared subject effects:  McNemar {null['mcnemar']:.2%}, "
          f"subject-clustered {null['clustered']:.2%}")  # fmt: skip
    print(f"type-I, subject-varying effect (mean 0): McNemar {het['mcnemar']:.2%}, "
          f"subject-clustered {het['clustered']:.2%}")  # fmt: skip
    fdr, hit = bh_fdr(rng, a.panels, a.per)
    print(f"BH over 57 subjects, 20% with a true drop: FDR {fdr:.2%} (q {FDR_Q}), power {hit:.1%}")
    cases = ((200, 0.7, 0.0), (1000, 0.6, 0.5), (5700, 0.55, 0.6),
             # a subject's items with correlated outcomes (MMLU-NA subjects: 73-1,522 items)
             (73, 0.9, 0.6), (100, 0.5, 0.6), (150, 0.9, 0.6))  # fmt: skip
    for n, acc, rho in cases:
        drop = float(planned_mde(n, acc, rho))
        power = mcnemar_power(n, acc, rho, drop, a.panels, a.seed)
        print(
            f"MDE n={n} acc={acc} rho={rho}: {100 * drop:.2f} points, simulated power {power:.1%}"
        )
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
