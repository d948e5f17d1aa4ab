"""Per-item randomness: every draw is seeded by (recipe seed, purpose, item id), never by a
global RNG, so removing or reordering items never changes another item's output."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import numpy as np


def item_rng(seed: int, item_id: str, purpose: str) -> random.Random:
    """A fresh RNG for one item and one purpose (e.g. `gpqa_shuffle`)."""
    return random.Random(f"{seed}:{purpose}:{item_id}")


def item_hashes(seed: int, ids: Sequence[str], purpose: str) -> np.ndarray:
    """One uniform 64-bit draw per item from blake2b(seed:purpose:id) — the cheap per-item
    equivalent of `item_rng(...).getrandbits(64)` for columnar builders."""
    prefix = hashlib.blake2b(f"{seed}:{purpose}:".encode(), digest_size=8)
    digests = bytearray()
    for item_id in ids:  # the shared prefix is hashed once, each item only adds its id
        h = prefix.copy()
        h.update(item_id.encode())
        digests += h.digest()
    return np.frombuffer(bytes(digests), dtype=">u8").astype(np.uint64)


def item_choice_index(seed: int, ids: Sequence[str], purpose: str, k: np.ndarray) -> np.ndarray:
    """Per item, a uniform index in [0, k_i)."""
    return (item_hashes(seed, ids, purpose) % k.astype(np.uint64)).astype(np.int64)
