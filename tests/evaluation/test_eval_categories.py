"""MMLU subject → category mapping against the real MMLU test split."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from nabench.core.errors import NabenchError
from nabench.evaluation.categories import (
    MMLU_CATEGORIES,
    UnknownSubjectError,
    mmlu_category,
    mmlu_subject_categories,
)

# The shared data folder sits beside the repository checkout (also in CI).
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
MMLU_TEST = DATA / "cais__mmlu" / "all" / "test-00000-of-00001.parquet"


def test_covers_exactly_the_subjects_in_the_real_data() -> None:
    assert MMLU_TEST.is_file(), f"MMLU test split missing at {MMLU_TEST}"
    subjects = set(pd.read_parquet(MMLU_TEST, columns=["subject"])["subject"].unique())
    assert len(subjects) == 57
    assert set(mmlu_subject_categories()) == subjects


def test_category_sizes_match_the_standard_grouping() -> None:
    # lm-eval-harness grouping: 19 STEM, 13 humanities, 12 social sciences, 13 other.
    counts = Counter(mmlu_subject_categories().values())
    assert counts == {"stem": 19, "humanities": 13, "social_sciences": 12, "other": 13}
    assert set(counts) == set(MMLU_CATEGORIES)


@pytest.mark.parametrize(
    ("subject", "category"),
    [
        ("abstract_algebra", "stem"),
        ("computer_security", "stem"),
        ("formal_logic", "humanities"),
        ("professional_law", "humanities"),
        ("econometrics", "social_sciences"),
        ("human_sexuality", "social_sciences"),
        ("business_ethics", "other"),
        ("professional_medicine", "other"),
    ],
)
def test_known_subjects(subject: str, category: str) -> None:
    assert mmlu_category(subject) == category


def test_unknown_subject_raises_clear_error() -> None:
    with pytest.raises(UnknownSubjectError, match="did you mean college_physics") as info:
        mmlu_category("college_physic")
    assert isinstance(info.value, NabenchError)
    with pytest.raises(UnknownSubjectError, match="unknown MMLU subject 'Anatomy'"):
        mmlu_category("Anatomy")


def test_mapping_is_read_only() -> None:
    with pytest.raises(TypeError):
        mmlu_subject_categories()["anatomy"] = "other"  # type: ignore[index]
