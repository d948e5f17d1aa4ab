"""A paper's own tables in `nabench report --protocol NAME`: the preset's `report.tables`
name them, one function each in `PAPER_TABLES`; a table marked per grouping is computed under
every category grouping the preset lists (``<name>_<grouping>``).

The NA study (`na-paper`), each needing ≥ 5 models like every panel statistic:

* ``paper_table1_<g>``: discrimination index per category × variant: mean and SD of the
  per-item D of `discrimination_table` over the category's items;
* ``paper_table2_<g>``: KR-20 per category × variant as the mean ± SD over the category's
  subjects (`nabench.stats.paper_tables.kr20_mean_sd_by_category`);
* ``anova_<g>``: the per-category ANOVA of per-subject KR-20 across variants;
* ``paper_table3``: accuracy per NA phrasing per model (the report's `phrasing` table);
* ``full_vs_na_filtered`` (needs ``report --labels``, the items' NA-applicability labels):
  per subject, `na_keyed` accuracy on all its items ("full") and on the items labelled
  NA-applicable ("NA-filtered", what a labelled build keeps); over the subjects whose filter
  rate (share of items the filter removes) is under 50 %, the Pearson r (scipy) of full vs
  filtered accuracy, per model run and for the mean over models (paper: r = 0.61);
  ``full_vs_na_filtered_subjects`` holds the per-subject numbers.

"Artifacts or Abduction" (`artifacts-paper`):

* ``baseline_t_test``: per model run × config, a one-sided independent two-sample t-test
  (scipy ``ttest_ind(..., alternative="greater")``, as the authors' code) of the per-item
  scores against the per-item scores of the majority baseline (1 where the gold letter is
  the config's most frequent one), significant at p < 0.00005 as the paper;
* ``qi_choices_only_kappa``: per model run, Cohen's κ between its choices-only and its
  two-step question-inference (``qi_step2``) predictions on their common items (an invalid
  answer is its own label).

The 75 % rule (``report.mmlu_two_step_share``): when a two-step config is among MMLU
results, both tables use only the first 75 % of the source items (in source order, by the
index at the end of the item id) for every model and config, as the authors' evaluation
does; the majority baseline stays computed over all items, as theirs.

Groupings: ``lm_eval`` (the report's default) and ``hendrycks`` (MMLU's own categories.py);
they differ in one subject, anatomy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats as sps

from nabench.core.errors import NabenchError
from nabench.evaluation.categories import Grouping
from nabench.evaluation.panel import Panel, anova_table
from nabench.evaluation.results import NA_KEYED, NON_MMLU, Results, category_of
from nabench.schemas.protocol import Protocol, ReportPreset
from nabench.stats.inference import cohen_kappa
from nabench.stats.paper_tables import kr20_mean_sd_by_category

__all__ = ["ARTIFACTS_ALPHA", "PAPER_TABLES", "paper_tables"]

ARTIFACTS_ALPHA = 0.00005  # the artifacts paper's significance level


@dataclass(frozen=True)
class PaperContext:
    """What a paper table is computed from: the report's tables, panels and results."""

    tables: Mapping[str, pd.DataFrame]
    panels: Sequence[Panel]
    configs: Sequence[str]  # original + the variants, for the ANOVA
    results: Results
    preset: ReportPreset
    labels: pd.DataFrame | None = None  # id, na_applicable (`report --labels`)


@dataclass(frozen=True)
class PaperTable:
    name: str
    per_grouping: bool
    compute: Callable[[PaperContext, Grouping], pd.DataFrame]


def _regrouped(df: pd.DataFrame, grouping: Grouping) -> pd.DataFrame:
    return df.assign(category=[category_of(s, grouping) for s in df["subject"]])


def _discrimination(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    d = _regrouped(ctx.tables["discrimination"], grouping)
    return (
        d.groupby(["category", "config"], sort=True)["D"]
        .agg(n_items="size", mean_D="mean", sd_D="std")
        .reset_index()
    )


def _kr20_mean_sd(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    frames = [
        kr20_mean_sd_by_category(
            {p.config: p.scores}, p.subjects, {s: category_of(s, grouping) for s in set(p.subjects)}
        )
        for p in ctx.panels
        if p.enough
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _anova(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    return anova_table(_regrouped(ctx.tables["kr20_subject"], grouping), ctx.configs)


def _phrasing(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    return ctx.tables["phrasing"]


QI_STEP2 = "qi_step2"


def _model_responses(results: Results) -> pd.DataFrame:
    r = results.responses
    return r[r["run"].isin(results.models)]


def _source_index(source_id: str) -> tuple[str, int]:
    """Sort key in source order: ``mmlu/all/test/00123`` -> (``mmlu/all/test``, 123)."""
    head, _, tail = source_id.rpartition("/")
    return (head, int(tail)) if tail.isdigit() else (source_id, -1)


def _two_step_items(ctx: PaperContext) -> set[str] | None:
    """The source ids every config is scored on under the 75 % rule; None: all of them."""
    share = ctx.preset.mmlu_two_step_share
    r = _model_responses(ctx.results)
    if share is None or QI_STEP2 not in set(r["config"].astype(str)):
        return None
    if not all(category_of(s) != NON_MMLU for s in r["subject"].unique()):
        return None  # the authors apply it to MMLU only
    order = sorted({str(s) for s in r["source_id"].unique()}, key=_source_index)
    return set(order[: int(share * len(order))])


def _baseline_t_test(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    keep = _two_step_items(ctx)
    out = []
    for (run, config), g in _model_responses(ctx.results).groupby(["run", "config"], sort=True):
        majority = g["gold"].value_counts().idxmax()
        base = (g["gold"] == majority).to_numpy(np.float64)  # over all items, as the authors
        scored = g if keep is None else g[g["source_id"].astype(str).isin(keep)]
        scores = scored["score"].to_numpy(np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant samples: scipy warns, returns nan
            t, p = sps.ttest_ind(scores, base, alternative="greater")
        t, p = float(t), float(p)
        out.append(
            {
                "run": run,
                "config": config,
                "n": len(scored),
                "n_baseline": len(g),
                "accuracy": float(scores.mean()) if len(scores) else math.nan,
                "majority_letter": majority,
                "majority_baseline": float(base.mean()),
                "t": t,
                "p_value": p,
                "significant": bool(not math.isnan(p) and p < ARTIFACTS_ALPHA),
            }
        )
    cols = ["run", "config", "n", "n_baseline", "accuracy", "majority_letter",
            "majority_baseline", "t", "p_value", "significant"]  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def _qi_kappa(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    keep = _two_step_items(ctx)
    r = _model_responses(ctx.results)
    if keep is not None:
        r = r[r["source_id"].astype(str).isin(keep)]
    out = []
    for run, g in r.groupby("run", sort=True):
        co = g[g["config"] == "choices_only"].set_index("id")["parsed"]
        qi = g[g["config"] == QI_STEP2].set_index("id")["parsed"]
        common = co.index.intersection(qi.index)
        if common.empty:
            continue
        a = co.loc[common].fillna("invalid").astype(str).tolist()
        b = qi.loc[common].fillna("invalid").astype(str).tolist()
        k = cohen_kappa(a, b)
        out.append(
            {
                "run": run,
                "n": k.n,
                "kappa": k.kappa,
                "ci_low": k.ci_low,
                "ci_high": k.ci_high,
                "agreement": k.agreement,
            }
        )
    return pd.DataFrame(out, columns=["run", "n", "kappa", "ci_low", "ci_high", "agreement"])


FILTER_RATE_BELOW = 0.5  # the NA study correlates subjects the filter leaves at least half of
_FILTER_COLS = ["scope", "n_subjects", "n_subjects_left_out", "pearson_r", "pearson_p", "note"]


def na_filter_subjects(results: Results, labels: pd.DataFrame) -> pd.DataFrame:
    """Per model run × subject: `na_keyed` accuracy on all items and on the NA-applicable ones."""
    r = _model_responses(results)
    r = r[r["config"] == NA_KEYED]
    applicable = {str(i) for i, a in zip(labels["id"], labels["na_applicable"], strict=True)
                  if a is True}  # fmt: skip
    labelled = {str(i) for i in labels["id"]}
    src = r["source_id"].astype(str)
    if r.empty or not src.isin(labelled).any():
        raise NabenchError(
            "report --labels: the labels name none of the na_keyed items evaluated "
            "(labels are keyed by source item id; evaluate the unlabelled build)"
        )
    frame = pd.DataFrame(
        {
            "run": r["run"].astype(str).to_numpy(),
            "subject": r["subject"].astype(object).fillna("(none)").to_numpy(),
            "score": r["score"].to_numpy(np.float64),
            "kept": src.isin(applicable).to_numpy(),
            "unlabelled": (~src.isin(labelled)).to_numpy(),
        }
    )
    frame["kept_score"] = frame["score"].where(frame["kept"])
    out = frame.groupby(["run", "subject"], sort=True).agg(
        n_full=("score", "size"),
        n_filtered=("kept", "sum"),
        n_unlabelled=("unlabelled", "sum"),
        acc_full=("score", "mean"),
        acc_filtered=("kept_score", "mean"),  # NaN where the filter keeps nothing
    )
    out.insert(3, "filter_rate", 1.0 - out["n_filtered"] / out["n_full"])
    return out.reset_index()


def _filter_correlation(scope: str, subjects: pd.DataFrame) -> dict[str, object]:
    kept = subjects[subjects["filter_rate"] < FILTER_RATE_BELOW]
    row: dict[str, object] = {"scope": scope, "n_subjects": len(kept),
                              "n_subjects_left_out": len(subjects) - len(kept)}  # fmt: skip
    x = kept["acc_full"].to_numpy(np.float64)
    y = kept["acc_filtered"].to_numpy(np.float64)
    if len(kept) < 3:
        return {**row, "note": "fewer than 3 subjects under the filter-rate cut"}
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {**row, "note": "constant accuracies"}
    pr = sps.pearsonr(x, y)
    return {**row, "pearson_r": float(pr.statistic), "pearson_p": float(pr.pvalue), "note": ""}


_NEEDS_LABELS = "needs report --labels"


def _full_vs_filtered(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    if ctx.labels is None:
        return pd.DataFrame([{"scope": "all", "note": _NEEDS_LABELS}], columns=_FILTER_COLS)
    per = na_filter_subjects(ctx.results, ctx.labels)
    rows = [_filter_correlation(str(run), g) for run, g in per.groupby("run", sort=True)]
    mean = per.groupby("subject", sort=True)[["acc_full", "acc_filtered", "filter_rate"]].mean()
    rows.append(_filter_correlation("mean over models", mean))
    return pd.DataFrame(rows, columns=_FILTER_COLS)


def _full_vs_filtered_subjects(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    if ctx.labels is None:
        return pd.DataFrame([{"note": _NEEDS_LABELS}])
    return na_filter_subjects(ctx.results, ctx.labels)


PAPER_TABLES: dict[str, PaperTable] = {
    t.name: t
    for t in (
        PaperTable("discrimination_by_category_variant", True, _discrimination),
        PaperTable("kr20_mean_sd_over_subjects", True, _kr20_mean_sd),
        PaperTable("anova_by_category", True, _anova),
        PaperTable("accuracy_by_phrasing", False, _phrasing),
        PaperTable("full_vs_na_filtered", False, _full_vs_filtered),
        PaperTable("full_vs_na_filtered_subjects", False, _full_vs_filtered_subjects),
        PaperTable("baseline_t_test", False, _baseline_t_test),
        PaperTable("qi_choices_only_kappa", False, _qi_kappa),
    )
}
# The name each table is written under (report.json, tables/<name>.csv).
_OUTPUT_NAME = {
    "discrimination_by_category_variant": "paper_table1",
    "kr20_mean_sd_over_subjects": "paper_table2",
    "anova_by_category": "anova",
    "accuracy_by_phrasing": "paper_table3",
}


def paper_tables(
    tables: Mapping[str, pd.DataFrame],
    panels: Sequence[Panel],
    configs: Sequence[str],
    results: Results,
    protocol: Protocol,
    labels: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """The tables `protocol.report` asks for, from the report's own tables and panels
    (``labels``: the items' NA-applicability labels, for ``full_vs_na_filtered``)."""
    spec = protocol.report
    if spec is None:
        return {}
    ctx = PaperContext(tables, panels, configs, results, spec, labels)
    out: dict[str, pd.DataFrame] = {}
    for name in spec.tables:
        table = PAPER_TABLES[name]
        base = _OUTPUT_NAME.get(name, name)
        if table.per_grouping:
            for grouping in spec.categories:
                out[f"{base}_{grouping}"] = table.compute(ctx, grouping)
        else:
            out[base] = table.compute(ctx, spec.categories[0])
    return out
