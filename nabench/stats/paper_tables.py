"""Tables of the NA study (`--protocol na-paper`) as pure functions over response matrices.

* Table 2: KR-20 per category × variant as the **mean ± SD over the subjects** of the
  category (one KR-20 per subject), not one KR-20 over the pooled items of a category.
Table 3 (accuracy per NA phrasing) is the report's `phrasing` table
(`nabench.evaluation.tables.phrasing_table`).

Inputs are plain arrays / frames so the report can wire them in without this module knowing
about run folders. The SD is the sample SD (ddof = 1) over subjects, nan with one subject.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from nabench.stats.reliability import kr20_by_group

__all__ = ["kr20_mean_sd_by_category"]


def kr20_mean_sd_by_category(
    responses: Mapping[str, ArrayLike],
    subjects: Sequence[str],
    category_of: Mapping[str, str],
) -> pd.DataFrame:
    """Per (category, variant): mean and SD of the per-subject KR-20 over the category's
    subjects, and how many subjects had a defined KR-20.

    `responses[variant]` is a models × items score matrix whose item j is of subject
    `subjects[j]` (the same items, in the same order, for every variant); `category_of`
    maps a subject to its category.
    """
    rows = []
    for variant, matrix in responses.items():
        per_subject = kr20_by_group(matrix, list(subjects))
        by_category: dict[str, list[float]] = {}
        for subject, value in per_subject.items():
            by_category.setdefault(category_of[str(subject)], []).append(value)
        for category, values in sorted(by_category.items()):
            defined = np.array([v for v in values if not math.isnan(v)])
            rows.append(
                {
                    "category": category,
                    "variant": variant,
                    "kr20_mean": float(defined.mean()) if defined.size else math.nan,
                    "kr20_sd": float(defined.std(ddof=1)) if defined.size > 1 else math.nan,
                    "n_subjects": int(defined.size),
                    "n_subjects_total": len(values),
                }
            )
    return pd.DataFrame(rows, columns=[
        "category", "variant", "kr20_mean", "kr20_sd", "n_subjects", "n_subjects_total"
    ])  # fmt: skip
