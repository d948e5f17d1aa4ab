"""The loader and metrics on the 10 released Line of Duty result files, read in place.

Expected counts are recomputed here independently with plain pandas on the raw columns, and the
known irregularities of the files are checked one by one.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nabench.selfknow import (
    LINE_OF_DUTY_COLUMNS,
    SelfKnowledgeCounts,
    load_selfknow_table,
    load_taxonomy,
    selfknow_metrics,
)

GEN_CLASS = "Task Category (Generation)"
GEN_TYPE = "Type of Self-Knowledge (Generation)"
GEN_REASON = "Reason for Incapacity (Generation)"
CLS_CLASS = "Task Category (Classification)"
CLS_TYPE = "Type of Self-Knowledge (Classification)"
CLS_REASON = "Reason for Incapacity (Classification)"

# Irregular rows per file (folder/stem); every other file has none.
IRREGULAR: dict[str, dict[str, int]] = {
    "challenge_qap_prompt/gemini-1.5-flash_results_advanced": {
        "classified_feasible_with_reason": 2,
        "generated_feasible_with_reason": 1,
    },
    "challenge_qap_prompt/mistral-large-latest_results_advanced": {
        "classified_feasible_with_reason": 1,
    },
    "vanilla_prompt/gemini-1.5-flash_results": {"generated_feasible_with_reason": 1},
    "vanilla_prompt/gpt-4o-mini_results": {"classified_infeasible_without_reason": 19},
}
QUALITY_FIELDS = (
    "generated_feasible_with_reason",
    "classified_feasible_with_reason",
    "generated_infeasible_without_reason",
    "classified_infeasible_without_reason",
)


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _raw(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_all_ten_reference_files_present(reference_files: list[Path]) -> None:
    assert {p.parent.name for p in reference_files} == {"vanilla_prompt", "challenge_qap_prompt"}
    assert set(IRREGULAR) <= {_key(p) for p in reference_files}


def test_layout_is_detected(reference_file: Path) -> None:
    table = load_selfknow_table(reference_file)
    raw = _raw(reference_file)
    assert list(table.columns) == [
        "generated_class",
        "generated_reason",
        "classified_class",
        "classified_reason",
        "generated_type",
        "classified_type",
        "id",
        "task",
        "llm",
    ]
    for canonical, source in LINE_OF_DUTY_COLUMNS.items():
        assert table[canonical].tolist() == raw[source].tolist()


def test_counts_match_independent_computation(reference_file: Path) -> None:
    raw = _raw(reference_file)
    result = selfknow_metrics(load_selfknow_table(reference_file))
    gen_f, cls_f = raw[GEN_CLASS] == "Feasible", raw[CLS_CLASS] == "Feasible"
    gen_r, cls_r = raw[GEN_CLASS] == "Infeasible", raw[CLS_CLASS] == "Infeasible"
    same = (raw[GEN_REASON] == raw[CLS_REASON]) & (raw[GEN_REASON] != "")
    expected = SelfKnowledgeCounts(
        ff=int((gen_f & cls_f).sum()),
        fr=int((gen_f & cls_r).sum()),
        rf=int((gen_r & cls_f).sum()),
        rr=int((gen_r & cls_r & same).sum()),
        rr_mismatch=int((gen_r & cls_r & ~same).sum()),
    )
    assert result.counts == expected
    assert result.n == 800 == len(raw)
    assert expected.ff + expected.fr == 400 == expected.rf + expected.rr + expected.rr_mismatch
    assert result.quality.invalid_rows == 0
    assert result.scores.accuracy == pytest.approx((expected.ff + expected.rr) / 800)


def test_type_level_matches_independent_computation(reference_file: Path) -> None:
    raw = _raw(reference_file)
    result = selfknow_metrics(load_selfknow_table(reference_file), match="type")
    both_r = (raw[GEN_CLASS] == "Infeasible") & (raw[CLS_CLASS] == "Infeasible")
    same_reason = (raw[GEN_REASON] == raw[CLS_REASON]) & (raw[GEN_REASON] != "")
    same_type = raw[GEN_TYPE] == raw[CLS_TYPE]
    assert result.counts.rr == int((both_r & (same_reason | same_type)).sum())


def test_every_name_is_in_the_taxonomy(reference_file: Path) -> None:
    raw = _raw(reference_file)
    taxonomy = load_taxonomy()
    for column in (GEN_REASON, CLS_REASON):
        for text in set(raw[column]) - {""}:
            assert taxonomy.find_reason(text) is not None, text
    for column in (GEN_TYPE, CLS_TYPE):
        for text in set(raw[column]) - {""}:
            assert taxonomy.find_type(text) is not None, text
    assert taxonomy.find_type("Functional Ceiling") is taxonomy.types[0]
    quality = selfknow_metrics(load_selfknow_table(reference_file)).quality
    assert quality.unknown_generated_reasons == {}
    assert quality.unknown_classified_reasons == {}


def test_reason_and_type_columns_agree(reference_file: Path) -> None:
    """In the released files each reason sits under its own taxonomy type."""
    raw = _raw(reference_file)
    taxonomy = load_taxonomy()
    for type_col, reason_col in ((GEN_TYPE, GEN_REASON), (CLS_TYPE, CLS_REASON)):
        rows = raw[raw[reason_col] != ""]
        for type_text, reason_text in zip(rows[type_col], rows[reason_col], strict=True):
            assert taxonomy.find_type(type_text) == taxonomy.reason_to_type(reason_text)


def test_by_type_follows_generated_type_column(reference_file: Path) -> None:
    raw = _raw(reference_file)
    result = selfknow_metrics(load_selfknow_table(reference_file))
    taxonomy = load_taxonomy()
    expected = {
        taxonomy.find_type(text).id: count  # type: ignore[union-attr]
        for text, count in raw[GEN_TYPE].value_counts().items()
    }
    assert {key: value.counts.n for key, value in result.by_type.items()} == expected
    assert sum((t.counts for t in result.by_type.values()), SelfKnowledgeCounts()) == result.counts


def test_irregular_rows_are_reported(reference_file: Path) -> None:
    result = selfknow_metrics(load_selfknow_table(reference_file))
    expected = IRREGULAR.get(_key(reference_file), {})
    for name in QUALITY_FIELDS:
        assert getattr(result.quality, name) == expected.get(name, 0), name


def test_gemini_generated_feasible_with_reason_counts_as_feasible(
    reference_files: list[Path],
) -> None:
    for path in reference_files:
        if path.stem.startswith("gemini-1.5-flash"):
            table = load_selfknow_table(path)
            odd = table[
                (table["generated_class"] == "Feasible") & (table["generated_reason"] != "")
            ]
            assert len(odd) == 1
            # generated feasible, classified infeasible: N_fr whatever the stray reason says
            assert selfknow_metrics(odd).counts == SelfKnowledgeCounts(fr=1)


def test_classified_feasible_with_reason_counts_as_feasible(reference_files: list[Path]) -> None:
    expected = {
        "gemini-1.5-flash_results_advanced": SelfKnowledgeCounts(rf=2),
        "mistral-large-latest_results_advanced": SelfKnowledgeCounts(ff=1),
    }
    for path in reference_files:
        if path.stem in expected:
            table = load_selfknow_table(path)
            odd = table[
                (table["classified_class"] == "Feasible")
                & ((table["classified_reason"] != "") | (table["classified_type"] != ""))
            ]
            assert selfknow_metrics(odd).counts == expected[path.stem]


def test_gpt_4o_mini_infeasible_without_reason(reference_files: list[Path]) -> None:
    (path,) = [p for p in reference_files if _key(p) == "vanilla_prompt/gpt-4o-mini_results"]
    table = load_selfknow_table(path)
    odd = table[(table["classified_class"] == "Infeasible") & (table["classified_reason"] == "")]
    assert len(odd) == 19
    assert (odd["classified_type"] != "").all()
    # no reason → never a reason-level match; type-level uses the classified type column
    assert selfknow_metrics(odd).counts == SelfKnowledgeCounts(rr_mismatch=19)
    same_type = int((odd["generated_type"] == odd["classified_type"]).sum())
    typed = selfknow_metrics(odd, match="type").counts
    assert typed == SelfKnowledgeCounts(rr=same_type, rr_mismatch=19 - same_type)
    assert 0 < same_type < 19
