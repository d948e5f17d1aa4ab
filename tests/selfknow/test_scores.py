"""The formulas on hand-computed counts, zero denominators and properties over random counts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP

from nabench.selfknow import SelfKnowledgeCounts, score_counts

counts_strategy = st.builds(
    SelfKnowledgeCounts,
    ff=st.integers(0, 50),
    fr=st.integers(0, 50),
    rf=st.integers(0, 50),
    rr=st.integers(0, 50),
    rr_mismatch=st.integers(0, 50),
)


def test_all_formulas_hand_computed() -> None:
    # N_ff=3, N_fr=1, N_rf=2, N_rr=4, N_rr'=2 (n=12)
    scores = score_counts(SelfKnowledgeCounts(ff=3, fr=1, rf=2, rr=4, rr_mismatch=2))
    assert scores.accuracy == pytest.approx(7 / 12)
    assert scores.foresight == pytest.approx(4 / 8)
    assert scores.insight == pytest.approx(4 / 7)
    assert scores.overconfidence == pytest.approx(1 / 4)
    assert scores.conservatism == pytest.approx(2 / 8)
    assert scores.confidence_balance == pytest.approx(0.0)  # Over == Cons
    assert scores.harmonic_fi == pytest.approx(8 / 15)  # 2·(1/2)(4/7)/(1/2+4/7)


def test_confidence_balance_positive_when_overconfident() -> None:
    # Over = 3/4, Cons = 1/2 → CB = (3/4 − 1/2)/(3/4) = 1/3
    scores = score_counts(SelfKnowledgeCounts(ff=1, fr=3, rf=1, rr=1, rr_mismatch=0))
    assert scores.overconfidence == pytest.approx(3 / 4)
    assert scores.conservatism == pytest.approx(1 / 2)
    assert scores.confidence_balance == pytest.approx(1 / 3)


def test_confidence_balance_negative_when_conservative() -> None:
    # Over = 1/4, Cons = 3/4 → CB = (1/4 − 3/4)/(3/4) = −2/3
    scores = score_counts(SelfKnowledgeCounts(ff=3, fr=1, rf=3, rr=1, rr_mismatch=0))
    assert scores.confidence_balance == pytest.approx(-2 / 3)


def test_confidence_balance_extremes() -> None:
    only_over = score_counts(SelfKnowledgeCounts(ff=1, fr=1, rr=1))  # Over 1/2, Cons 0
    assert only_over.confidence_balance == pytest.approx(1.0)
    only_cons = score_counts(SelfKnowledgeCounts(ff=1, rf=1, rr=1))  # Over 0, Cons 1/2
    assert only_cons.confidence_balance == pytest.approx(-1.0)


def test_empty_counts_everything_undefined() -> None:
    scores = score_counts(SelfKnowledgeCounts())
    assert all(value is None for value in scores.as_dict().values())


def test_only_feasible_generated() -> None:
    # no infeasible-generated rows: F, Cons undefined; I has denominator N_fr only
    scores = score_counts(SelfKnowledgeCounts(ff=2, fr=2))
    assert scores.accuracy == pytest.approx(0.5)
    assert scores.overconfidence == pytest.approx(0.5)
    assert scores.foresight is None
    assert scores.conservatism is None
    assert scores.insight == 0.0
    assert scores.confidence_balance is None  # Cons undefined
    assert scores.harmonic_fi is None  # F undefined


def test_only_infeasible_generated() -> None:
    scores = score_counts(SelfKnowledgeCounts(rr=3, rr_mismatch=1))
    assert scores.overconfidence is None
    assert scores.confidence_balance is None
    assert scores.foresight == pytest.approx(3 / 4)
    assert scores.insight == pytest.approx(3 / 4)
    assert scores.conservatism == 0.0
    assert scores.harmonic_fi == pytest.approx(3 / 4)


def test_both_rates_zero_gives_zero_balance() -> None:
    scores = score_counts(SelfKnowledgeCounts(ff=1, rr=1))
    assert scores.overconfidence == 0.0 and scores.conservatism == 0.0
    assert scores.confidence_balance == 0.0


def test_foresight_and_insight_zero_gives_zero_harmonic() -> None:
    scores = score_counts(SelfKnowledgeCounts(rr_mismatch=1))
    assert scores.foresight == 0.0 and scores.insight == 0.0
    assert scores.harmonic_fi == 0.0
    assert scores.accuracy == 0.0


def test_negative_count_rejected() -> None:
    with pytest.raises(ValueError):
        SelfKnowledgeCounts(ff=-1)


def test_counts_add_and_names() -> None:
    total = SelfKnowledgeCounts(1, 2, 3, 4, 5) + SelfKnowledgeCounts(5, 4, 3, 2, 1)
    assert total == SelfKnowledgeCounts(6, 6, 6, 6, 6)
    assert total.as_dict() == {"N_ff": 6, "N_fr": 6, "N_rf": 6, "N_rr": 6, "N_rr'": 6, "n": 30}


@CHEAP
@given(counts_strategy)
def test_scores_in_range(counts: SelfKnowledgeCounts) -> None:
    scores = score_counts(counts)
    for name in ("accuracy", "foresight", "insight", "overconfidence", "conservatism"):
        value = getattr(scores, name)
        assert value is None or 0.0 <= value <= 1.0, name
    cb = scores.confidence_balance
    assert cb is None or -1.0 <= cb <= 1.0
    hm = scores.harmonic_fi
    if hm is not None:
        assert scores.foresight is not None and scores.insight is not None
        low, high = sorted((scores.foresight, scores.insight))
        assert low - 1e-12 <= hm <= high + 1e-12


@CHEAP
@given(counts_strategy)
def test_undefined_exactly_when_denominator_zero(counts: SelfKnowledgeCounts) -> None:
    c = counts
    scores = score_counts(c)
    assert (scores.accuracy is None) == (c.n == 0)
    assert (scores.foresight is None) == (c.rf + c.rr + c.rr_mismatch == 0)
    assert (scores.insight is None) == (c.fr + c.rr + c.rr_mismatch == 0)
    assert (scores.overconfidence is None) == (c.ff + c.fr == 0)
    assert (scores.conservatism is None) == (scores.foresight is None)
    assert (scores.confidence_balance is None) == (
        scores.overconfidence is None or scores.conservatism is None
    )


@CHEAP
@given(counts_strategy)
def test_confidence_balance_sign(counts: SelfKnowledgeCounts) -> None:
    scores = score_counts(counts)
    if scores.confidence_balance is None:
        return
    assert scores.overconfidence is not None and scores.conservatism is not None
    difference = scores.overconfidence - scores.conservatism
    assert math.copysign(1, scores.confidence_balance) == math.copysign(1, difference) or (
        scores.confidence_balance == 0 and difference == 0
    )
    # ±1 exactly when one rate is zero and the other is not
    if scores.conservatism == 0 and scores.overconfidence > 0:
        assert scores.confidence_balance == 1.0
    if scores.overconfidence == 0 and scores.conservatism > 0:
        assert scores.confidence_balance == -1.0


@CHEAP
@given(counts_strategy)
def test_swapping_fr_and_rf_swaps_foresight_and_insight(counts: SelfKnowledgeCounts) -> None:
    """What swapping the generated and classified labels does to the counts (see test_metrics):
    N_fr and N_rf trade places, the rest stays. Then F and I swap, A and HM stay, and the new
    overconfidence is N_rf/(N_ff+N_rf) — *not* the old conservatism, whose denominator differs.
    """
    c = counts
    swapped = SelfKnowledgeCounts(ff=c.ff, fr=c.rf, rf=c.fr, rr=c.rr, rr_mismatch=c.rr_mismatch)
    before, after = score_counts(c), score_counts(swapped)
    assert after.foresight == before.insight
    assert after.insight == before.foresight
    assert after.accuracy == before.accuracy
    assert after.harmonic_fi == before.harmonic_fi
    expected_over = None if c.ff + c.rf == 0 else c.rf / (c.ff + c.rf)
    assert after.overconfidence == expected_over
    expected_cons = (
        None if c.fr + c.rr + c.rr_mismatch == 0 else c.fr / (c.fr + c.rr + c.rr_mismatch)
    )
    assert after.conservatism == expected_cons


@CHEAP
@given(counts_strategy)
def test_foresight_plus_conservatism_plus_mismatch_share_is_one(
    counts: SelfKnowledgeCounts,
) -> None:
    scores = score_counts(counts)
    denominator = counts.rf + counts.rr + counts.rr_mismatch
    if denominator:
        assert scores.foresight is not None and scores.conservatism is not None
        total = scores.foresight + scores.conservatism + counts.rr_mismatch / denominator
        assert total == pytest.approx(1.0)
