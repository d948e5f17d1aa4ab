"""Tables of the NA study (`--protocol na-paper`) as pure functions over response matrices.

* Table 2: KR-20 per category × variant as the **mean ± SD over the subjects** of the
  category (one KR-20 per subject), not one KR-20 over the pooled items of a category.
* Table 3: accuracy of every model on every NA phrasing (one column per phrasing config).

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

__all__ = ["accuracy_by_phrasing", "kr20_mean_sd_by_category"]


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


def accuracy_by_phrasing(scores: pd.DataFrame, phrasing_of: Mapping[str, str]) -> pd.DataFrame:
    """Models × NA phrasings: mean score of each model on each phrasing's config.

    `scores` has columns `model`, `config`, `score` (one row per model × item); `phrasing_of`
    maps each NA-keyed config to its phrasing (e.g. `na_keyed` -> "None of the above").
    Configs not in `phrasing_of` are ignored.
    """
    keyed = scores[scores["config"].isin(list(phrasing_of))]
    table = keyed.assign(phrasing=keyed["config"].map(phrasing_of)).pivot_table(
        index="model", columns="phrasing", values="score", aggfunc="mean"
    )
    order = [p for p in dict.fromkeys(phrasing_of.values()) if p in table.columns]
    return table[order]
