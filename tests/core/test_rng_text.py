"""The card's statement of the per-item draws (`rng_text`, `hash_text`) is Python that gives
the draws the builders make."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP

from nabench.core.rng import hash_text, item_hashes, item_rng, rng_text

_ID = st.text(min_size=1, max_size=30)
_PURPOSE = st.sampled_from(["na_distractor", "foreign_key", "sample", "x:y"])


@CHEAP
@given(seed=st.integers(-(2**63), 2**63 - 1), item_id=_ID, purpose=_PURPOSE)
def test_hash_text_is_item_hashes(seed: int, item_id: str, purpose: str) -> None:
    stated = eval(hash_text(purpose), {"hashlib": hashlib, "seed": seed, "item_id": item_id})
    assert stated == int(item_hashes(seed, [item_id], purpose)[0])


@CHEAP
@given(seed=st.integers(-(2**63), 2**63 - 1), item_id=_ID, purpose=_PURPOSE)
def test_rng_text_is_item_rng(seed: int, item_id: str, purpose: str) -> None:
    stated = eval(rng_text(purpose), {"random": random, "seed": seed, "item_id": item_id})
    assert stated.random() == item_rng(seed, item_id, purpose).random()
