"""Which configs a key-blind shortcut wins: a reference strategy that answers from the
options alone (always-a, longest, always-na, never-na, always-aota) scoring above the
config's majority baseline by more than its 95 % CI (Wilson lower bound > baseline).

One rule for the report (over reference runs, ``tables.shortcut_table``) and the card of
a build (over the built rows, :func:`score_shortcuts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nabench.evaluation.scoring import majority_baseline
from nabench.evaluation.strategies import STRATEGIES, ItemBatch, get_strategy
from nabench.stats.inference import wilson_interval

__all__ = ["ShortcutScore", "score_shortcuts", "shortcut_margin"]


def shortcut_margin(ci_low: ArrayLike, majority: ArrayLike) -> NDArray[np.float64]:
    """How far a strategy's CI lies above the majority baseline; > 0 means it wins."""
    return np.asarray(ci_low, dtype=np.float64) - np.asarray(majority, dtype=np.float64)


@dataclass(frozen=True)
class ShortcutScore:
    """A key-blind strategy's accuracy on one config's items, against the majority baseline."""

    strategy: str
    n: int
    accuracy: float
    ci_low: float
    majority_baseline: float

    @property
    def beats_majority(self) -> bool:
        return bool(shortcut_margin(self.ci_low, self.majority_baseline) > 0)


def score_shortcuts(batch: ItemBatch) -> list[ShortcutScore]:
    """Every key-blind strategy's score on ``batch`` (empty batch: none)."""
    n = len(batch)
    if n == 0:
        return []
    majority = majority_baseline(batch.gold.tolist())
    out = []
    for name, cls in STRATEGIES.items():
        if cls.reads_gold:
            continue
        hits = int((get_strategy(name).choose(batch) == batch.gold).sum())
        low, _ = wilson_interval(hits, n)
        out.append(ShortcutScore(name, n, hits / n, low, majority))
    return out
