"""Per-item randomness: every draw is seeded by (recipe seed, purpose, item id), never by a
global RNG, so removing or reordering items never changes another item's output.

The card states these draws as Python text (`rng_text`, `hash_text`); the functions below
compute exactly that text, and tests/core/test_rng_text.py evaluates the text to check."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The seeding key of an item's draw; `purpose` is fixed per use, `{seed}`/`{item_id}` vary.
_KEY = 'f"{{seed}}:{purpose}:{{item_id}}"'
HASH_BYTES = 8


def rng_text(purpose: str) -> str:
    """Python text of `item_rng(seed, item_id, purpose)` (names `seed`, `item_id`)."""
    return f"random.Random({_KEY.format(purpose=purpose)})"


def hash_text(purpose: str) -> str:
    """Python text of one `item_hashes(seed, [item_id], purpose)` value."""
    key = _KEY.format(purpose=purpose)
    return (
        f'int.from_bytes(hashlib.blake2b({key}.encode(), digest_size={HASH_BYTES}).digest(), "big")'
    )


@dataclass(frozen=True)
class Draw:
    """One per-item draw a builder makes, as the card states it: the seeded generator or
    hash (`text`) and what is done with it (`use`, prose naming the draw `H` or `rng`)."""

    purpose: str
    kind: str  # "hash" (blake2b, `item_hashes`) or "random" (`item_rng`)
    use: str

    @property
    def text(self) -> str:
        return hash_text(self.purpose) if self.kind == "hash" else rng_text(self.purpose)

    def card_line(self) -> str:
        name = "H" if self.kind == "hash" else "rng"
        return f"`{self.purpose}` draw: `{name} = {self.text}`; {self.use}"


def item_rng(seed: int, item_id: str, purpose: str) -> random.Random:
    """A fresh RNG for one item and one purpose (e.g. `gpqa_shuffle`)."""
    return random.Random(f"{seed}:{purpose}:{item_id}")


def item_hashes(seed: int, ids: Sequence[str], purpose: str) -> np.ndarray:
    """One uniform 64-bit draw per item from blake2b(seed:purpose:id) — the cheap per-item
    equivalent of `item_rng(...).getrandbits(64)` for columnar builders."""
    prefix = hashlib.blake2b(f"{seed}:{purpose}:".encode(), digest_size=HASH_BYTES)
    digests = bytearray()
    for item_id in ids:  # the shared prefix is hashed once, each item only adds its id
        h = prefix.copy()
        h.update(item_id.encode())
        digests += h.digest()
    return np.frombuffer(bytes(digests), dtype=">u8").astype(np.uint64)


def item_choice_index(seed: int, ids: Sequence[str], purpose: str, k: np.ndarray) -> np.ndarray:
    """Per item, a uniform index in [0, k_i)."""
    return (item_hashes(seed, ids, purpose) % k.astype(np.uint64)).astype(np.int64)
