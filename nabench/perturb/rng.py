"""Per-item randomness: every draw is seeded by (recipe seed, purpose, item id), never by a
global RNG, so removing or reordering items never changes another item's output."""

from __future__ import annotations

import random


def item_rng(seed: int, item_id: str, purpose: str) -> random.Random:
    """A fresh RNG for one item and one purpose (e.g. `na_distractor`, `gpqa_shuffle`)."""
    return random.Random(f"{seed}:{purpose}:{item_id}")
