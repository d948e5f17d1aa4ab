"""Per-item scores, the majority baseline and a one-sided test against it.

Generation score per item: correct → 1, wrong → 0, invalid (unparseable) →
``invalid_credit`` (default 0.25, the chance rate of a 4-choice item). Only invalid
outputs get that credit: a wrong letter always scores 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from nabench.evaluation.parsing import INVALID

__all__ = [
    "BaselineTest",
    "baseline_test",
    "individual_prior_score",
    "individual_prior_scores",
    "majority_baseline",
    "score_codes",
    "score_generation",
]

DEFAULT_INVALID_CREDIT = 0.25


def score_generation(
    pred: str | None, gold: str, invalid_credit: float = DEFAULT_INVALID_CREDIT
) -> float:
    """Score one parsed prediction (``None`` = invalid) against the gold letter."""
    if pred is None:
        return float(invalid_credit)
    return 1.0 if pred == gold else 0.0


def score_codes(
    pred: ArrayLike, gold: ArrayLike, invalid_credit: float = DEFAULT_INVALID_CREDIT
) -> NDArray[np.float64]:
    """Vectorised :func:`score_generation` over 0-based codes (``INVALID`` = -1)."""
    p = np.asarray(pred)
    g = np.asarray(gold)
    if p.shape != g.shape:
        raise ValueError(f"pred and gold shapes differ: {p.shape} vs {g.shape}")
    return np.where(p == INVALID, float(invalid_credit), (p == g).astype(np.float64))


def individual_prior_score(
    judged_true: Sequence[bool | None], gold_index: int, empty_credit: float = 0.25
) -> float:
    """Score one item from per-option True/False judgements.

    S = options judged True (``None``, an unparseable judgement, counts as not True).
    S empty → ``empty_credit``; gold in S → 1/|S|; otherwise 0.
    """
    chosen = [i for i, j in enumerate(judged_true) if j is True]
    if not chosen:
        return float(empty_credit)
    return 1.0 / len(chosen) if gold_index in chosen else 0.0


def individual_prior_scores(
    judged_true: ArrayLike, gold_index: ArrayLike, empty_credit: float = 0.25
) -> NDArray[np.float64]:
    """Vectorised :func:`individual_prior_score`: ``judged_true`` is items × options bool."""
    j = np.asarray(judged_true, dtype=bool)
    g = np.asarray(gold_index, dtype=np.intp)
    if j.ndim != 2 or g.shape != (j.shape[0],):
        raise ValueError("judged_true must be items × options and gold_index one per item")
    size = j.sum(axis=1)
    gold_in = j[np.arange(j.shape[0]), g]
    inv = 1.0 / np.maximum(size, 1)  # max() only avoids 1/0 where size == 0 anyway
    return np.where(size == 0, float(empty_credit), np.where(gold_in, inv, 0.0))


def majority_baseline(gold: Iterable[object]) -> float:
    """Share of the most frequent gold label (e.g. letter) among the items."""
    counts = Counter(gold)
    n = sum(counts.values())
    if n == 0:
        raise ValueError("majority_baseline needs at least one item")
    return max(counts.values()) / n


@dataclass(frozen=True)
class BaselineTest:
    """One-sided test H1: mean score > baseline."""

    mean: float
    baseline: float
    n: int
    statistic: float  # t for "t"; number of successes for "binomial"
    p_value: float
    method: Literal["t", "binomial"]


def baseline_test(
    scores: ArrayLike,
    baseline: float,
    method: Literal["auto", "t", "binomial"] = "auto",
) -> BaselineTest:
    """Test whether per-item scores beat ``baseline`` (one-sided, ``greater``).

    ``auto`` uses the exact binomial test (``scipy.stats.binomtest``) when every score
    is 0 or 1, and the one-sample t-test (``scipy.stats.ttest_1samp``) otherwise, since
    partial credit (0.25 for invalid outputs) is not a Bernoulli outcome. If all scores
    are equal the t-statistic is ±inf or undefined; the p-value is then 0 when the mean
    exceeds the baseline and 1 otherwise.
    """
    x = np.asarray(scores, dtype=np.float64).ravel()
    n = x.size
    if n == 0:
        raise ValueError("need at least one score")
    if not 0.0 <= baseline <= 1.0:
        raise ValueError(f"baseline must be in [0, 1], got {baseline}")
    mean = float(x.mean())
    binary = bool(np.all((x == 0.0) | (x == 1.0)))
    if method == "auto":
        method = "binomial" if binary else "t"
    if method == "binomial":
        if not binary:
            raise ValueError("binomial test needs scores that are all 0 or 1")
        k = int(x.sum())
        res = sps.binomtest(k, n, baseline, alternative="greater")
        return BaselineTest(mean, baseline, n, float(k), float(res.pvalue), "binomial")
    if np.ptp(x) == 0.0:
        # Zero variance: scipy would return nan with a warning; decide by the mean alone.
        t = np.inf if mean > baseline else (-np.inf if mean < baseline else np.nan)
        return BaselineTest(mean, baseline, n, float(t), 0.0 if mean > baseline else 1.0, "t")
    res_t = sps.ttest_1samp(x, baseline, alternative="greater")
    return BaselineTest(mean, baseline, n, float(res_t.statistic), float(res_t.pvalue), "t")
