"""The per-process cache of normalised option texts and their pattern flags gives the same
answers as computing them afresh: whatever came before, nulls, and after the cache starts
over at its size limit."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import MODERATE

from nabench.audit import patterns
from nabench.audit.patterns import clear_text_cache, flag_options, normalise, normalise_text

TEXTS = st.one_of(
    st.none(),
    st.sampled_from(["None of the above", "none of above.", "A and B", "Both", "4", " 4 ",
                     "Ｎｏｎｅ of the above", "None\u200b of the above", "all of these"]),
    st.text(max_size=12),
)  # fmt: skip


def _fresh(values: list[str | None]) -> tuple[list[str | None], list[str | None], dict]:
    clear_text_cache()
    arr = pa.array(values, pa.string())
    return (normalise(arr).to_pylist(), normalise(arr, fold=False).to_pylist(),
            {k: v.tolist() for k, v in flag_options(arr).items()})  # fmt: skip


@MODERATE
@given(st.lists(TEXTS, max_size=20), st.lists(TEXTS, max_size=20))
def test_cached_answers_equal_fresh_ones(before: list, values: list) -> None:
    expected = _fresh(values)
    clear_text_cache()
    flag_options(pa.array(before, pa.string()))  # warm the cache with other texts first
    arr = pa.array(values, pa.string())
    assert normalise(arr).to_pylist() == expected[0]
    assert normalise(arr, fold=False).to_pylist() == expected[1]
    assert {k: v.tolist() for k, v in flag_options(arr).items()} == expected[2]
    # and each text as the single-string path (no cache) normalises it
    assert expected[0] == [None if v is None else normalise_text(v) for v in values]


def test_real_phrasings_flagged_through_the_cache() -> None:
    clear_text_cache()
    arr = pa.array(["None of above.", "A and B", "Paris", None, "None of above."])
    flags = flag_options(arr)
    assert flags["has_none_option"].tolist() == [True, False, False, False, True]
    # "... of above" also refers to the other options (pattern `of-the-above`)
    assert flags["refers_to_other_options"].tolist() == [True, True, False, False, True]
    # a recipe's own NA phrasing (phrases) is matched on the cached normalised text
    flags = flag_options(arr, {"has_none_option": ["PARIS"]})
    assert flags["has_none_option"].tolist() == [True, False, True, False, True]


def test_the_cache_starts_over_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns._TextCache, "LIMIT", 5)
    clear_text_cache()
    first = [f"option {k}" for k in range(4)]
    normalise(pa.array(first))
    values = ["None of the above", "x  y", None, "option 1", "B and C only", "Q"]
    got = normalise(pa.array(values)).to_pylist()
    assert got == ["none of the above", "x y", None, "option 1", "b and c only", "q"]
    assert len(patterns._CACHE.texts) <= 1 + len(values)  # started over, kept only these
    flags = np.logical_or.reduce(list(flag_options(pa.array(values)).values()))
    assert flags.tolist() == [True, False, False, False, True, False]
