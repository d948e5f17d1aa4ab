"""The headline: each model's accuracy drop from ``original`` to each variant, with CIs.

Rows of ``original`` and of a variant are paired by source item (``source_id``; the
item id for NA builds): a variant row is compared with the original row of its item.
Accuracy is the mean item score (invalid outputs score the run's invalid credit), the
difference is ``acc_original − acc_variant`` and the relative drop is ``difference /
acc_original``; 95 % CIs by paired percentile bootstrap (2,000 resamples, seed 0) over
source items, so a config with several rows per item resamples whole items
(``nabench.stats.paired.paired_drops``). McNemar's test (``nabench.stats.paired.mcnemar``)
uses the 0/1 ``correct`` outcomes (an invalid answer is not correct). The same table per
MMLU category and per subject (hundreds to thousands of rows on a full panel:
normal-approximation CIs with cluster-robust standard errors, ``ci_method: normal``),
and HELM's worst case: per item the lowest score over every variant the run answered it
in, against ``original``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from nabench.evaluation.results import ORIGINAL, Results, category_of
from nabench.stats.paired import mcnemar_many, paired_drops, paired_drops_normal

__all__ = [
    "HEADLINE_COLUMNS",
    "headline_by",
    "headline_redux",
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


_RENAME = {"rel_low": "rel_drop_low", "rel_high": "rel_drop_high"}


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


def _counts(paired: pd.DataFrame, g: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    co = paired["correct_o"].to_numpy(bool)
    cv = paired["correct_v"].to_numpy(bool)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(g, mask.astype(np.float64), n_groups).astype(np.int64)

    return {
        "orig_only_correct": count(co & ~cv),
        "variant_only_correct": count(~co & cv),
        "both_correct": count(co & cv),
        "both_wrong": count(~co & ~cv),
        "invalid_original": count(paired["invalid_o"].to_numpy(bool)),
        "invalid_variant": count(paired["invalid_v"].to_numpy(bool)),
    }


def _group_codes(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Dense group codes of ``frame``'s ``keys`` (in order of appearance) and the
    position of each group's first row."""
    code = np.zeros(len(frame), dtype=np.int64)
    for k in keys:
        c, uniq = pd.factorize(frame[k])
        code = pd.factorize(code * max(1, len(uniq)) + c)[0]
    _, first = np.unique(code, return_index=True)
    return code, first


def headline_by(
    paired: pd.DataFrame, results: Results, extra: Sequence[str] = (), bootstrap: bool = True
) -> pd.DataFrame:
    """The headline table per run × config (× ``extra`` columns, e.g. subject).

    ``bootstrap=False`` gives normal-approximation CIs (cluster-robust), for tables of
    thousands of rows (per subject); the ``ci_method`` column says which.
    """
    keys = ["run", "config", *extra]
    cols = [*HEADLINE_COLUMNS[:4], *extra, *HEADLINE_COLUMNS[4:], "ci_method"]
    if paired.empty:
        return pd.DataFrame(columns=cols)
    g, first = _group_codes(paired, keys)
    n_groups = len(first)
    src, _ = pd.factorize(paired["source_id"])  # codes: a cluster is a source item
    clustered = len(np.unique(g * (int(src.max()) + 1) + src)) < len(g)  # several rows per item
    args = (paired["score_o"].to_numpy(), paired["score_v"].to_numpy(), g,
            src if clustered else None)  # fmt: skip
    stats = paired_drops(*args) if bootstrap else paired_drops_normal(*args)
    counts = _counts(paired, g, n_groups)
    table = paired.iloc[first][keys].reset_index(drop=True)
    models = dict(zip(results.summaries["run"], results.summaries["model"], strict=False))
    table.insert(1, "model", table["run"].map(models))
    table.insert(2, "role", table["run"].map(results.roles()))
    for name, values in {**stats, **counts}.items():
        table[_RENAME.get(name, name)] = values
    _, p, exact = mcnemar_many(counts["orig_only_correct"], counts["variant_only_correct"])
    table["mcnemar_p"] = p
    table["mcnemar_method"] = np.where(exact, "exact", "chi2")
    table["ci_method"] = "bootstrap" if bootstrap else "normal"
    return table[cols]


def headline_table(results: Results, variants: Sequence[str]) -> dict[str, pd.DataFrame]:
    """``headline``, ``headline_subjects``, ``headline_categories`` and ``worst_case``."""
    paired = paired_frame(results, variants)
    return {
        "headline": headline_by(paired, results),
        "headline_subjects": headline_by(paired, results, ["subject"], bootstrap=False),
        "headline_categories": headline_by(paired, results, ["category"], bootstrap=False),
        "worst_case": worst_case_table(paired, results),
    }


def headline_redux(
    results: Results, variants: Sequence[str], error_types: Mapping[str, str]
) -> pd.DataFrame:
    """The headline split by MMLU-Redux verdict (``redux``: ``ok``, or ``flagged`` for any
    other error type, `expert` included), over the items Redux annotated (``error_types``:
    item id -> error_type, a build's ``redux`` config); unannotated items are left out."""
    paired = paired_frame(results, variants)
    verdict = paired["source_id"].map(error_types)
    paired = paired.loc[verdict.notna()].assign(
        redux=np.where(verdict[verdict.notna()] == "ok", "ok", "flagged")
    )
    return headline_by(paired, results, ["redux"])


def worst_case_table(paired: pd.DataFrame, results: Results) -> pd.DataFrame:
    """Per run: original vs the worst score over all its variants, per source item.

    Only items the run answered in every one of its variants count.
    """
    if paired.empty:
        return pd.DataFrame(columns=[*HEADLINE_COLUMNS, "ci_method", "variants"])
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
    table["variants"] = [", ".join(variants[r]) for r in table["run"]]
    return table
