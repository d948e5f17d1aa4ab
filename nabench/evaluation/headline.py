"""The headline: each model's accuracy drop from ``original`` to each variant, with CIs.

Rows of ``original`` and of a variant are paired by source item (``source_id``; the
item id for NA builds): a variant row is compared with the original row of its item.
Accuracy is the mean item score (invalid outputs score the run's invalid credit), the
difference is ``acc_original − acc_variant`` and the relative drop is ``difference /
acc_original``; 95 % CIs by paired percentile bootstrap (2,000 resamples, seed 0) over
source items, so a config with several rows per item resamples whole items
(``nabench.stats.paired.paired_drop``). McNemar's test (``nabench.stats.paired.mcnemar``) uses
the 0/1 ``correct`` outcomes (an invalid answer is not correct). The same table per
subject and per MMLU category, and HELM's worst case: per item the lowest score over
every variant the run answered it in, against ``original``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from nabench.evaluation.results import ORIGINAL, Results, category_of
from nabench.stats.paired import mcnemar, paired_drop

__all__ = [
    "HEADLINE_COLUMNS",
    "headline_by",
    "headline_table",
    "paired_frame",
    "worst_case_table",
]

HEADLINE_COLUMNS = [
    "run",
    "model",
    "role",
    "config",
    "n",
    "n_clusters",
    "acc_original",
    "acc_variant",
    "diff",
    "diff_low",
    "diff_high",
    "rel_drop",
    "rel_drop_low",
    "rel_drop_high",
    "mcnemar_p",
    "mcnemar_method",
    "orig_only_correct",
    "variant_only_correct",
    "both_correct",
    "both_wrong",
    "invalid_original",
    "invalid_variant",
]


def paired_frame(results: Results, variants: Sequence[str]) -> pd.DataFrame:
    """One row per variant row with the original row of its source item (same run)."""
    r = results.responses
    base = r.loc[
        r["config"] == ORIGINAL, ["run", "source_id", "subject", "score", "correct", "invalid"]
    ]
    if base.duplicated(["run", "source_id"]).any():
        base = base.drop_duplicates(["run", "source_id"])
    other = r.loc[
        r["config"].isin(list(variants)),
        ["run", "config", "source_id", "score", "correct", "invalid"],
    ]
    paired = other.merge(base, on=["run", "source_id"], suffixes=("_v", "_o"))
    paired["subject"] = paired["subject"].fillna("(none)")
    cats = {s: category_of(s) for s in paired["subject"].unique()}
    paired["category"] = paired["subject"].map(cats)
    return paired


def _row(g: pd.DataFrame) -> dict[str, Any]:
    src = g["source_id"].to_numpy()
    clustered = len(pd.unique(src)) < len(src)
    drop = paired_drop(g["score_o"].to_numpy(), g["score_v"].to_numpy(), src if clustered else None)
    co = g["correct_o"].to_numpy(bool)
    cv = g["correct_v"].to_numpy(bool)
    b, c = int((co & ~cv).sum()), int((~co & cv).sum())
    test = mcnemar(b, c)
    return {
        **drop.fields(),
        "mcnemar_p": test.p_value,
        "mcnemar_method": test.method,
        "orig_only_correct": b,
        "variant_only_correct": c,
        "both_correct": int((co & cv).sum()),
        "both_wrong": int((~co & ~cv).sum()),
        "invalid_original": int(g["invalid_o"].sum()),
        "invalid_variant": int(g["invalid_v"].sum()),
    }


def headline_by(paired: pd.DataFrame, results: Results, extra: Sequence[str] = ()) -> pd.DataFrame:
    """The headline table per run × config (× ``extra`` columns, e.g. subject)."""
    keys = ["run", "config", *extra]
    roles = results.roles()
    models = dict(zip(results.summaries["run"], results.summaries["model"], strict=True))
    rows = [
        {
            "run": k[0],
            "model": models[k[0]],
            "role": roles[k[0]],
            "config": k[1],
            **dict(zip(extra, k[2:], strict=True)),
            **_row(g),
        }
        for k, g in paired.groupby(keys, sort=False)
    ]
    cols = [*HEADLINE_COLUMNS[:4], *extra, *HEADLINE_COLUMNS[4:]]
    return pd.DataFrame(rows, columns=cols)


def headline_table(results: Results, variants: Sequence[str]) -> dict[str, pd.DataFrame]:
    """``headline``, ``headline_subjects``, ``headline_categories`` and ``worst_case``."""
    paired = paired_frame(results, variants)
    return {
        "headline": headline_by(paired, results),
        "headline_subjects": headline_by(paired, results, ["subject"]),
        "headline_categories": headline_by(paired, results, ["category"]),
        "worst_case": worst_case_table(paired, results),
    }


def worst_case_table(paired: pd.DataFrame, results: Results) -> pd.DataFrame:
    """Per run: original vs the worst score over all its variants, per source item.

    Only items the run answered in every one of its variants count.
    """
    if paired.empty:
        return pd.DataFrame(columns=[*HEADLINE_COLUMNS, "variants"])
    n_var = paired.groupby("run")["config"].nunique()
    per_item = (
        paired.groupby(["run", "source_id"], sort=False)
        .agg(
            n_configs=("config", "nunique"),
            score_v=("score_v", "min"),
            correct_v=("correct_v", "min"),
            invalid_v=("invalid_v", "max"),
            score_o=("score_o", "first"),
            correct_o=("correct_o", "first"),
            invalid_o=("invalid_o", "first"),
        )
        .reset_index()
    )
    full = per_item[per_item["n_configs"].to_numpy() == n_var.loc[per_item["run"]].to_numpy()]
    full = full.assign(config="worst_case")
    table = headline_by(full, results)
    variants = paired.groupby("run")["config"].unique()
    table["variants"] = table["run"].map(lambda r: ", ".join(variants[r]))
    return table
