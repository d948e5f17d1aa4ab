"""Holm and Benjamini–Hochberg adjusted p-values: hand-computed, against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from nabench.stats.multitest import adjust_by_family, bh_adjust, holm_adjust


def test_hand_computed_four_p_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → running
    # max 0.02, 0.03, 0.06, 0.06.
    assert holm_adjust(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # BH: p·m/rank = 0.02, 0.02, 0.04, 0.04 (ranks 1-4) → running min from the top.
    assert bh_adjust(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_statsmodels_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.round(rng.beta(0.4, 1.0, size=int(rng.integers(1, 300))), 3)  # rounding: ties
    for ours, method in ((holm_adjust(p), "holm"), (bh_adjust(p), "fdr_bh")):
        ref = multipletests(p, method=method)[1]
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)


def test_nan_is_not_a_test_and_families_are_separate() -> None:
    p = np.array([0.01, np.nan, 0.02, 0.01, 0.02])
    fam = np.array(["a", "a", "a", "b", "b"])
    holm, bh = adjust_by_family(p, fam)
    assert math.isnan(holm[1]) and math.isnan(bh[1])
    # family a has 2 tests (the nan does not count), family b 2 tests of its own
    assert holm[[0, 2]].tolist() == pytest.approx([0.02, 0.02])
    assert holm[[3, 4]].tolist() == pytest.approx([0.02, 0.02])
    assert bh[[0, 2, 3, 4]].tolist() == pytest.approx([0.02] * 4)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm_adjust([1.5])
