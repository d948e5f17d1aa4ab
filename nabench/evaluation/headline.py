"""The headline: each model's accuracy drop from ``original`` to each variant, with CIs.

Rows of ``original`` and of a variant are paired by source item (``source_id``; the
item id for NA builds): a variant row is compared with the original row of its item.
Accuracy is the share of correct answers (an invalid output is not correct; the invalid
credit belongs to ``score``, never to accuracy), printed beside the share of invalid
outputs (``invalid_share_original`` / ``invalid_share_variant``); the difference is
``acc_original − acc_variant`` and the relative drop is ``difference / acc_original``;
95 % CIs by paired percentile bootstrap (2,000 resamples, seed 0) over source items, so a
config with several rows per item resamples whole items
(``nabench.stats.paired.paired_drops``). McNemar's test (``nabench.stats.paired.mcnemar``)
uses the same 0/1 ``correct`` outcomes, so its discordant pairs and the difference agree.
The same table per MMLU category and per subject (hundreds to thousands of rows on a full
panel: normal-approximation CIs with cluster-robust standard errors, ``ci_method:
normal``), and HELM's worst case: per item the lowest outcome over every variant the run
answered it in, against ``original``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from nabench.evaluation.results import ORIGINAL, Results, category_of, subject_labels
from nabench.stats.multitest import FDR_Q, adjust_by_family
from nabench.stats.paired import (
    clustered_drop_test,
    mcnemar_many,
    paired_drops,
    paired_drops_normal,
)
from nabench.stats.power import mde_of_counts

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
    "invalid_share_original",
    "invalid_share_variant",
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
    "mde_80",
    "clustering",
    "n_clustering_units",
    "cl_diff_low",
    "cl_diff_high",
    "cl_p",
]
# Multiple-comparison columns (McNemar p adjusted within `family`), added per table.
FAMILY_COLUMNS = ["family", "mcnemar_p_holm", "mcnemar_p_bh", "significant_fdr"]


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
    paired["subject"] = subject_labels(paired["subject"])
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
    paired: pd.DataFrame,
    results: Results,
    extra: Sequence[str] = (),
    bootstrap: bool = True,
    cluster_by: str | None = "subject",
) -> pd.DataFrame:
    """The headline table per run × config (× ``extra`` columns, e.g. subject).

    ``bootstrap=False`` gives normal-approximation CIs (cluster-robust), for tables of
    thousands of rows (per subject); the ``ci_method`` column says which. The ``cl_*``
    columns are the drop's cluster-robust interval and test with ``cluster_by`` (a
    column of ``paired``) as clusters, or source items when it is None; ``clustering``
    names them.
    """
    keys = ["run", "config", *extra]
    cols = [*HEADLINE_COLUMNS[:4], *extra, *HEADLINE_COLUMNS[4:], "ci_method"]
    if paired.empty:
        return pd.DataFrame(columns=cols)
    g, first = _group_codes(paired, keys)
    n_groups = len(first)
    src, _ = pd.factorize(paired["source_id"])  # codes: a cluster is a source item
    clustered = len(np.unique(g * (int(src.max()) + 1) + src)) < len(g)  # several rows per item
    # strict accuracy: the 0/1 correct outcomes, as McNemar's counts below
    args = (paired["correct_o"].to_numpy(np.float64), paired["correct_v"].to_numpy(np.float64),
            g, src if clustered else None)  # fmt: skip
    stats = paired_drops(*args) if bootstrap else paired_drops_normal(*args)
    counts = _counts(paired, g, n_groups)
    table = paired.iloc[first][keys].reset_index(drop=True)
    models = dict(zip(results.summaries["run"], results.summaries["model"], strict=False))
    table.insert(1, "model", table["run"].map(models))
    table.insert(2, "role", table["run"].map(results.roles()))
    for name, values in {**stats, **counts}.items():
        table[_RENAME.get(name, name)] = values
    size = np.bincount(g, minlength=n_groups)
    table["invalid_share_original"] = counts["invalid_original"] / size
    table["invalid_share_variant"] = counts["invalid_variant"] / size
    _, p, exact = mcnemar_many(counts["orig_only_correct"], counts["variant_only_correct"])
    table["mcnemar_p"] = p
    table["mcnemar_method"] = np.where(exact, "exact", "chi2")
    table["ci_method"] = "bootstrap" if bootstrap else "normal"
    cells = ("both_correct", "orig_only_correct", "variant_only_correct", "both_wrong")
    table["mde_80"] = mde_of_counts(*(counts[k] for k in cells))
    _clustered_columns(table, paired, g, src if clustered else None, cluster_by)
    return table[cols]


def _clustered_columns(
    table: pd.DataFrame,
    paired: pd.DataFrame,
    g: np.ndarray,
    src: np.ndarray | None,
    cluster_by: str | None,
) -> None:
    """The ``cl_*`` columns: clustered by ``cluster_by``, else by source item (rows of
    one item across phrasings), else each row is its own item."""
    if cluster_by is not None:
        units, _ = pd.factorize(paired[cluster_by])
        name = cluster_by
    else:
        units = src if src is not None else np.arange(len(paired))
        name = "source item" if src is not None else "item"
    # strict accuracy, as `diff` and McNemar: the score's invalid credit is not a correct answer
    o, v = (paired[c].to_numpy(np.float64) for c in ("correct_o", "correct_v"))
    cl = clustered_drop_test(o, v, g, units)
    table["clustering"] = name
    table["n_clustering_units"] = cl["n_clusters"]
    table["cl_diff_low"] = cl["low"]
    table["cl_diff_high"] = cl["high"]
    table["cl_p"] = cl["p_value"]


def add_family(table: pd.DataFrame, per_run: bool, tested: str) -> pd.DataFrame:
    """``table`` with McNemar p-values adjusted (Holm, BH) within each family of tests
    and ``significant_fdr`` (BH-adjusted p < FDR_Q). A family is every row of one run
    (``per_run``: e.g. its subjects × variants) or of one role (models × variants;
    reference strategies apart, so baselines never dilute the models' family); the
    ``family`` column states it."""
    if per_run:
        family = table["run"].astype(str) + f": {tested}"
    else:
        family = np.where(table["role"] == "model", "models", "baselines")
        family = pd.Series(family, index=table.index) + f" × {tested}"
    holm, bh = adjust_by_family(table["mcnemar_p"].to_numpy(np.float64), family.to_numpy())
    return table.assign(
        family=family, mcnemar_p_holm=holm, mcnemar_p_bh=bh, significant_fdr=bh < FDR_Q
    )


def headline_table(results: Results, variants: Sequence[str]) -> dict[str, pd.DataFrame]:
    """``headline``, ``headline_subjects``, ``headline_categories`` and ``worst_case``."""
    paired = paired_frame(results, variants)
    subjects = headline_by(paired, results, ["subject"], bootstrap=False, cluster_by=None)
    categories = headline_by(paired, results, ["category"], bootstrap=False)
    return {
        "headline": add_family(headline_by(paired, results), False, "variants"),
        "headline_subjects": add_family(subjects, True, "subjects × variants"),
        "headline_categories": add_family(categories, True, "categories × variants"),
        "worst_case": add_family(worst_case_table(paired, results), False, "worst case"),
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
    return add_family(headline_by(paired, results, ["redux"]), True, "Redux verdicts × variants")


def worst_case_table(paired: pd.DataFrame, results: Results) -> pd.DataFrame:
    """Per run: original vs the worst outcome over all its variants, per source item
    (correct only if correct in every variant).

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
            subject=("subject", "first"),
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
