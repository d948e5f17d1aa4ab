"""selfknow_metrics on small hand-computed tables, irregular rows and table-level properties."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import MODERATE

from nabench.core.errors import NabenchError
from nabench.selfknow import SelfKnowledgeCounts, selfknow_metrics
from nabench.selfknow.metrics import FEASIBLE_LABEL, NO_REASON_LABEL, UNATTRIBUTED

F, R = "Feasible", "Infeasible"
Row = Sequence[str]
"""(generated_class, generated_reason, classified_class, classified_reason[, gen_type, cls_type])"""


def make_table(rows: Iterable[Row], with_types: bool = False) -> pd.DataFrame:
    """A canonical table from short row tuples."""
    columns = ["generated_class", "generated_reason", "classified_class", "classified_reason"]
    if with_types:
        columns += ["generated_type", "classified_type"]
    return pd.DataFrame([list(row) for row in rows], columns=columns, dtype=object)


def repeat(row: Row, times: int) -> list[Row]:
    return [row] * times


# N_ff=3, N_fr=1, N_rf=2, N_rr=4, N_rr'=2; one of the N_rr' pairs shares a type.
HAND_ROWS = [
    *repeat((F, "", F, ""), 3),
    (F, "", R, "Missing Context"),
    *repeat((R, "Malicious Intent", F, ""), 2),
    *repeat((R, "Malicious Intent", R, "malicious  intent"), 2),
    (R, "Vague/Open-Ended", R, "vague - open ended"),
    (R, "Computational Complexity Exceeded", R, "computational complexity exceeded"),
    (R, "Missing Context", R, "Incoherent Context"),  # same type (contextual awareness)
    (R, "Outside Training Cutoff", R, "Malicious Intent"),  # different type
]


def test_hand_table_reason_level() -> None:
    result = selfknow_metrics(make_table(HAND_ROWS))
    assert result.match == "reason"
    assert result.counts == SelfKnowledgeCounts(ff=3, fr=1, rf=2, rr=4, rr_mismatch=2)
    assert result.n == 12
    s = result.scores
    assert s.accuracy == pytest.approx(7 / 12)
    assert s.foresight == pytest.approx(1 / 2)
    assert s.insight == pytest.approx(4 / 7)
    assert s.overconfidence == pytest.approx(1 / 4)
    assert s.conservatism == pytest.approx(1 / 4)
    assert s.confidence_balance == pytest.approx(0.0)
    assert s.harmonic_fi == pytest.approx(8 / 15)


def test_hand_table_type_level() -> None:
    result = selfknow_metrics(make_table(HAND_ROWS), match="type")
    assert result.match == "type"
    assert result.counts == SelfKnowledgeCounts(ff=3, fr=1, rf=2, rr=5, rr_mismatch=1)
    s = result.scores
    assert s.accuracy == pytest.approx(8 / 12)
    assert s.foresight == pytest.approx(5 / 8)
    assert s.insight == pytest.approx(5 / 7)
    assert s.harmonic_fi == pytest.approx(2 / 3)  # 2·(5/8)(5/7)/(5/8+5/7)


def test_hand_table_by_type_without_type_column() -> None:
    """Without generated_type, feasible rows (no reason) are unattributed."""
    by_type = selfknow_metrics(make_table(HAND_ROWS)).by_type
    assert list(by_type) == [
        "functional_capability",
        "contextual_awareness",
        "identification_of_ambiguity",
        "ethical_integrity",
        "temporal_perception",
        UNATTRIBUTED,
    ]
    assert by_type[UNATTRIBUTED].counts == SelfKnowledgeCounts(ff=3, fr=1)
    assert by_type[UNATTRIBUTED].scores.overconfidence == pytest.approx(1 / 4)
    assert by_type[UNATTRIBUTED].scores.foresight is None
    ethical = by_type["ethical_integrity"]
    assert ethical.counts == SelfKnowledgeCounts(rf=2, rr=2)
    assert ethical.scores.foresight == pytest.approx(1 / 2)
    assert ethical.scores.insight == pytest.approx(1.0)
    assert ethical.scores.conservatism == pytest.approx(1 / 2)
    assert ethical.scores.overconfidence is None
    assert ethical.scores.confidence_balance is None
    contextual = by_type["contextual_awareness"]
    assert contextual.counts == SelfKnowledgeCounts(rr_mismatch=1)
    assert contextual.scores.harmonic_fi == 0.0
    assert by_type["temporal_perception"].counts == SelfKnowledgeCounts(rr_mismatch=1)
    assert by_type["functional_capability"].counts == SelfKnowledgeCounts(rr=1)
    assert by_type["identification_of_ambiguity"].counts == SelfKnowledgeCounts(rr=1)


def test_hand_table_by_type_type_level() -> None:
    by_type = selfknow_metrics(make_table(HAND_ROWS), match="type").by_type
    assert by_type["contextual_awareness"].counts == SelfKnowledgeCounts(rr=1)
    assert by_type["temporal_perception"].counts == SelfKnowledgeCounts(rr_mismatch=1)


def test_feasible_rows_attributed_by_generated_type_column() -> None:
    rows = [
        (F, "", F, "", "Temporal Perception", ""),
        (F, "", R, "Outside Training Cutoff", "Temporal Perception", "Temporal Perception"),
        (F, "", F, "", "Functional Ceiling", ""),
        (R, "Abstract temporal setting", R, "Outside Training Cutoff", "Temporal Perception", ""),
    ]
    result = selfknow_metrics(make_table(rows, with_types=True))
    assert UNATTRIBUTED not in result.by_type
    temporal = result.by_type["temporal_perception"]
    assert temporal.counts == SelfKnowledgeCounts(ff=1, fr=1, rr_mismatch=1)
    assert temporal.scores.overconfidence == pytest.approx(1 / 2)
    assert result.by_type["functional_capability"].counts == SelfKnowledgeCounts(ff=1)
    # type-level: generated type column says temporal, classified reason is temporal too
    typed = selfknow_metrics(make_table(rows, with_types=True), match="type")
    assert typed.by_type["temporal_perception"].counts == SelfKnowledgeCounts(ff=1, fr=1, rr=1)


def test_type_column_wins_over_reason_and_unknown_type_column_falls_back() -> None:
    rows = [
        # type column names a known type → used even though the reason says otherwise
        (R, "Malicious Intent", R, "Missing Context", "Contextual Awareness", ""),
        # unknown type text but known reason → the reason's type
        (R, "Malicious Intent", R, "Offensive Topics", "Ethics-ish", ""),
        # unknown type and unknown reason → the type text is kept as an unknown type
        (R, "Lack of tools", R, "Lack of tools", "Tooling", ""),
    ]
    result = selfknow_metrics(make_table(rows, with_types=True))
    assert result.by_type["contextual_awareness"].counts.n == 1
    assert result.by_type["ethical_integrity"].counts.n == 1
    unknown = result.by_type["tooling"]
    assert unknown.known is False and unknown.name == "Tooling"
    assert unknown.counts == SelfKnowledgeCounts(rr=1)


def test_class_decides_over_stray_reasons() -> None:
    rows = [
        (F, "Offensive Topics", R, "Offensive Topics"),  # generated feasible with a reason
        (R, "Vague/Open-Ended", F, "Vague/Open-Ended"),  # classified feasible with a reason
        (F, "", F, "Computational Complexity Exceeded"),
    ]
    result = selfknow_metrics(make_table(rows))
    assert result.counts == SelfKnowledgeCounts(ff=1, fr=1, rf=1)
    assert result.quality.generated_feasible_with_reason == 1
    assert result.quality.classified_feasible_with_reason == 2
    assert result.confusion.count(FEASIBLE_LABEL, "Offensive topics") == 1


def test_infeasible_without_reason_never_matches() -> None:
    rows = [(R, "", R, ""), (R, "Missing Context", R, "")]
    result = selfknow_metrics(make_table(rows))
    assert result.counts == SelfKnowledgeCounts(rr_mismatch=2)
    assert result.quality.generated_infeasible_without_reason == 1
    assert result.quality.classified_infeasible_without_reason == 2
    assert result.confusion.count(NO_REASON_LABEL, NO_REASON_LABEL) == 1
    assert result.confusion.labels[-1] == NO_REASON_LABEL
    # at type level a missing reason with no type column has no type either
    assert selfknow_metrics(make_table(rows), match="type").counts.rr == 0


def test_spelled_out_no_reason_is_no_reason() -> None:
    """A reason cell "None" or "N/A" says there is no reason, as it does in a classification
    (classify writes them as ""): two infeasible "N/A"s matched as the same reason, N_rr, and
    gave foresight and insight 1.0 from tables with no reason in them."""
    rows = [(R, "None", R, "none"), (R, "N/A", R, "n/a"), (F, "none", F, "not applicable")]
    result = selfknow_metrics(make_table(rows))
    blank = selfknow_metrics(make_table([(R, "", R, ""), (R, "", R, ""), (F, "", F, "")]))
    assert result.counts == SelfKnowledgeCounts(ff=1, rr_mismatch=2) == blank.counts
    assert result.scores.foresight == 0.0 == result.scores.insight
    assert result.quality.as_dict() == blank.quality.as_dict()
    assert result.quality.generated_infeasible_without_reason == 2
    assert result.quality.generated_feasible_with_reason == 0
    assert result.quality.unknown_generated_reasons == {}


def test_spelled_out_no_type_is_no_type() -> None:
    """Type cells "N/A" on both sides were an unknown type compared by text ("n a"), so under
    type matching two infeasible verdicts with different reasons and no type agreed (N_rr)."""
    rows = [(R, "Lack of tools", R, "Needs internet", "N/A", "n/a")]
    spelled = selfknow_metrics(make_table(rows, with_types=True), match="type")
    blank = [(R, "Lack of tools", R, "Needs internet", "", "")]
    expected = selfknow_metrics(make_table(blank, with_types=True), match="type")
    assert spelled.counts == SelfKnowledgeCounts(rr_mismatch=1) == expected.counts


def test_unknown_reasons_are_kept_and_counted() -> None:
    rows = [
        (R, "Lack of tools", R, "lack-of TOOLS"),
        (R, "Lack of tools", R, "Missing Context"),
        (R, "Missing Context", R, "Needs internet"),
    ]
    result = selfknow_metrics(make_table(rows))
    assert result.counts == SelfKnowledgeCounts(rr=1, rr_mismatch=2)
    assert result.quality.unknown_generated_reasons == {"Lack of tools": 2}
    assert result.quality.unknown_classified_reasons == {"Lack of tools": 1, "Needs internet": 1}
    assert "Lack of tools" in result.confusion.labels
    assert "lack-of TOOLS" not in result.confusion.labels  # same key, first spelling kept
    assert result.confusion.count("Lack of tools", "Lack of tools") == 1
    assert result.by_type[UNATTRIBUTED].counts == SelfKnowledgeCounts(rr=1, rr_mismatch=1)


def test_invalid_class_rows_are_counted_not_scored() -> None:
    rows = [
        (" FEASIBLE ", "", "feasible.", ""),
        ("Infeasible", "Malicious Intent", "INFEASIBLE", "Malicious Intent"),
        ("maybe", "", "Feasible", ""),
        ("Feasible", "", "", ""),
        ("Feasible", "", "not sure", "Missing Context"),
    ]
    table = make_table(rows)
    table.loc[5] = [None, None, "Feasible", None]
    table.loc[6] = [float("nan"), "", "Infeasible", "Missing Context"]
    result = selfknow_metrics(table)
    assert result.counts == SelfKnowledgeCounts(ff=1, rr=1)
    assert result.quality.invalid_rows == 5
    assert result.quality.total_rows == 7 == result.n + result.quality.invalid_rows
    assert result.quality.invalid_examples[0] == (2, "maybe", "Feasible")
    assert len(result.quality.invalid_examples) == 5
    assert result.confusion.total == result.n


def test_invalid_examples_name_the_rows_of_a_part_of_a_table() -> None:
    """A build's per-style report scores the rows of one style: its invalid examples named
    positions in that part ("row 0" for the classifications table's row 2)."""
    table = make_table([(F, "", F, ""), (F, "", F, ""), (F, "", "", ""), (R, "", "?", "")])
    part = table[table["classified_class"] != F]
    quality = selfknow_metrics(part).quality
    assert [row for row, _, _ in quality.invalid_examples] == [2, 3]
    assert json.loads(json.dumps(quality.as_dict()))["invalid_examples"][0]["row"] == 2


def test_confusion_and_mismatch_pairs() -> None:
    rows = [
        *repeat((R, "Missing Context", R, "Incoherent Context"), 3),
        *repeat((R, "Malicious Intent", R, "Offensive Topics"), 2),
        (R, "Abstract temporal setting", R, "Vague/Open-Ended"),
        (R, "Malicious Intent", R, "Malicious Intent"),
        (F, "", R, "Missing Context"),
    ]
    result = selfknow_metrics(make_table(rows))
    pairs = [(p.generated, p.classified, p.count) for p in result.mismatches]
    assert pairs == [
        ("Missing context", "Incoherent context", 3),
        ("Malicious intent", "Offensive topics", 2),
        ("Abstract temporal setting", "Vague or open-ended", 1),
    ]
    assert result.confusion.count("Malicious intent", "Malicious intent") == 1
    assert result.confusion.count(FEASIBLE_LABEL, "Missing context") == 1
    assert result.confusion.labels[0] == FEASIBLE_LABEL
    assert len(result.confusion.labels) == 12  # Feasible + 11 taxonomy reasons
    frame = result.confusion.to_frame()
    assert frame.loc["Missing context", "Incoherent context"] == 3
    assert int(frame.to_numpy().sum()) == result.n
    typed = selfknow_metrics(make_table(rows), match="type")
    assert [(p.generated, p.classified) for p in typed.mismatches] == [
        ("Abstract temporal setting", "Vague or open-ended")
    ]


def test_empty_table() -> None:
    result = selfknow_metrics(make_table([]))
    assert result.n == 0
    assert all(value is None for value in result.scores.as_dict().values())
    assert list(result.by_type)[-1] == "temporal_perception"


def test_missing_columns_and_bad_match() -> None:
    with pytest.raises(NabenchError, match="classified_reason"):
        selfknow_metrics(
            pd.DataFrame(columns=["generated_class", "generated_reason", "classified_class"])
        )
    with pytest.raises(NabenchError, match="match mode"):
        selfknow_metrics(make_table(HAND_ROWS), match="exact")  # type: ignore[arg-type]


# ---------------------------------------------------------------- properties over random tables

REASON_SPELLINGS = [
    "",
    "Missing Context",
    "missing-context",
    "Incoherent Context",
    "Malicious Intent",
    "Offensive Topics",
    "Vague/Open-Ended",
    "Outside Training Cutoff",
    "Lack of tools",
]
CLASS_SPELLINGS = ["Feasible", "Infeasible", "feasible", " INFEASIBLE", "maybe"]
row_strategy = st.tuples(
    st.sampled_from(CLASS_SPELLINGS),
    st.sampled_from(REASON_SPELLINGS),
    st.sampled_from(CLASS_SPELLINGS),
    st.sampled_from(REASON_SPELLINGS),
)
tables = st.lists(row_strategy, max_size=25)


@MODERATE
@given(tables)
def test_counts_partition_the_valid_rows(rows: list[tuple[str, str, str, str]]) -> None:
    result = selfknow_metrics(make_table(rows))
    invalid = sum(1 for g, _, c, _ in rows if "maybe" in (g, c))
    assert result.quality.invalid_rows == invalid
    assert result.n == len(rows) - invalid
    assert result.confusion.total == result.n
    assert sum((t.counts for t in result.by_type.values()), SelfKnowledgeCounts()) == result.counts
    for value in (result.scores.accuracy, result.scores.foresight, result.scores.insight):
        assert value is None or 0.0 <= value <= 1.0
    cb = result.scores.confidence_balance
    assert cb is None or -1.0 <= cb <= 1.0


@MODERATE
@given(tables)
def test_type_level_only_moves_mismatches_to_matches(rows: list[tuple[str, str, str, str]]) -> None:
    by_reason = selfknow_metrics(make_table(rows)).counts
    by_type = selfknow_metrics(make_table(rows), match="type").counts
    assert (by_type.ff, by_type.fr, by_type.rf) == (by_reason.ff, by_reason.fr, by_reason.rf)
    assert by_type.rr >= by_reason.rr
    assert by_type.rr + by_type.rr_mismatch == by_reason.rr + by_reason.rr_mismatch


@MODERATE
@given(tables)
def test_swapping_generated_and_classified(rows: list[tuple[str, str, str, str]]) -> None:
    """Swap: N_fr ↔ N_rf, N_ff, N_rr, N_rr' unchanged, F ↔ I, A and HM unchanged, confusion
    matrix transposed (both reason- and type-level, as reason/type equality is symmetric)."""
    swapped_rows = [(c, cr, g, gr) for g, gr, c, cr in rows]
    for match in ("reason", "type"):
        before = selfknow_metrics(make_table(rows), match=match)
        after = selfknow_metrics(make_table(swapped_rows), match=match)
        b, a = before.counts, after.counts
        assert (a.ff, a.fr, a.rf, a.rr, a.rr_mismatch) == (b.ff, b.rf, b.fr, b.rr, b.rr_mismatch)
        assert after.scores.foresight == before.scores.insight
        assert after.scores.insight == before.scores.foresight
        assert after.scores.accuracy == before.scores.accuracy
        assert after.scores.harmonic_fi == before.scores.harmonic_fi
        labels = before.confusion.labels
        for g in labels:
            for c in labels:
                if g in after.confusion.labels and c in after.confusion.labels:
                    assert after.confusion.count(c, g) == before.confusion.count(g, c)


def _respell(text: str) -> str:
    return "  " + text.upper().replace(" ", " - ") + "."


@MODERATE
@given(tables)
def test_spelling_does_not_change_counts(rows: list[tuple[str, str, str, str]]) -> None:
    respelled = [tuple(_respell(cell) if cell else cell for cell in row) for row in rows]
    for match in ("reason", "type"):
        before = selfknow_metrics(make_table(rows), match=match)
        after = selfknow_metrics(make_table(respelled), match=match)
        assert after.counts == before.counts
        assert after.quality.invalid_rows == before.quality.invalid_rows


def test_scores_follow_counts_on_table() -> None:
    """A table-level spot check that the result's scores are the formulas of its counts."""
    result = selfknow_metrics(make_table(HAND_ROWS))
    c = result.counts
    assert math.isclose(result.scores.accuracy or -1, (c.ff + c.rr) / c.n)
