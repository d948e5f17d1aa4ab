"""A paper's own tables in `nabench report --protocol NAME`: the preset's `report.tables`
name them, one function each in `PAPER_TABLES`; a table marked per grouping is computed under
every category grouping the preset lists (``<name>_<grouping>``).

The NA study (`na-paper`), each needing ≥ 5 models like every panel statistic; Tables 1–2
and the ANOVA compare the preset's ``report.conditions`` (the paper's three: original, NA as
the answer, NA as a distractor) whatever else was evaluated, and ``tables/anova.csv`` is the
ANOVA under the preset's first (the paper's own, Hendrycks) grouping:

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
  scores (``score``: the paper's metric, an invalid answer earning the run's invalid
  credit; not accuracy) against the per-item scores of the majority baseline (1 where the
  gold letter is the config's most frequent one), significant at p < 0.00005 as the paper;
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
from nabench.evaluation.panel import Panel, anova_table, unmeasured
from nabench.evaluation.results import NA_KEYED, NON_MMLU, Results, category_of
from nabench.schemas.protocol import Protocol, ReportPreset
from nabench.stats.inference import cohen_kappa
from nabench.stats.paper_tables import kr20_mean_sd_by_category

__all__ = [
    "ARTIFACTS_ALPHA",
    "PAPER_TABLES",
    "condition_notes",
    "paper_anova",
    "paper_conditions",
    "paper_tables",
]

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
    d = ctx.tables["discrimination"]
    d = _regrouped(d[d["config"].isin(list(ctx.configs))], grouping)
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
        if p.enough and p.config in ctx.configs
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


def _two_step_left_out(ctx: PaperContext) -> set[str]:
    """Source ids the 75 % rule leaves out: the last quarter of the MMLU items (in source
    order) when a two-step config is among the MMLU results; other datasets stay whole."""
    share = ctx.preset.mmlu_two_step_share
    r = _model_responses(ctx.results)
    if share is None or r.empty:
        return set()
    subjects = pd.Series(r["subject"].astype(object).unique())
    mmlu_subjects = {s for s in subjects if category_of(s) != NON_MMLU}
    mmlu = r[r["subject"].astype(object).isin(mmlu_subjects)]
    if QI_STEP2 not in set(mmlu["config"].astype(str)):
        return set()
    order = sorted({str(s) for s in mmlu["source_id"].unique()}, key=_source_index)
    return set(order[int(share * len(order)) :])


def _baseline_t_test(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    left_out = _two_step_left_out(ctx)
    out = []
    for (run, config), g in _model_responses(ctx.results).groupby(["run", "config"], sort=True):
        majority = g["gold"].value_counts().idxmax()
        base = (g["gold"] == majority).to_numpy(np.float64)  # over all items, as the authors
        scored = g[~g["source_id"].astype(str).isin(left_out)] if left_out else g
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
                "score": float(scores.mean()) if len(scores) else math.nan,
                "majority_letter": majority,
                "majority_baseline": float(base.mean()),
                "t": t,
                "p_value": p,
                "significant": bool(not math.isnan(p) and p < ARTIFACTS_ALPHA),
            }
        )
    cols = ["run", "config", "n", "n_baseline", "score", "majority_letter",
            "majority_baseline", "t", "p_value", "significant"]  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def _qi_kappa(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    left_out = _two_step_left_out(ctx)
    r = _model_responses(ctx.results)
    if left_out:
        r = r[~r["source_id"].astype(str).isin(left_out)]
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


def _label_sets(labels: pd.DataFrame) -> tuple[set[str], set[str], set[str]]:
    """(labelled ids, NA-applicable ids, ids labelled not applicable)."""
    ids = labels["id"].astype(str)
    value = pd.Series(labels["na_applicable"].to_numpy(), dtype=object)
    applicable = value.map(lambda v: v is True or v is np.True_).to_numpy(bool)
    rejected = value.map(lambda v: v is False or v is np.False_).to_numpy(bool)
    return set(ids), set(ids[applicable]), set(ids[rejected])


def _na_keyed_responses(results: Results) -> pd.DataFrame:
    r = _model_responses(results)
    return r[r["config"] == NA_KEYED]


def na_filter_subjects(results: Results, labels: pd.DataFrame) -> pd.DataFrame:
    """Per model run × subject, over the labelled `na_keyed` items: accuracy on all of them
    ("full") and on the NA-applicable ones ("filtered"; an invalid label is filtered out,
    as a labelled build does). Items without a label are left out of both and counted."""
    r = _na_keyed_responses(results)
    labelled, applicable, rejected = _label_sets(labels)
    src = r["source_id"].astype(str)
    if r.empty or not src.isin(labelled).any():
        raise NabenchError(
            "report --labels: the labels name none of the na_keyed items evaluated "
            "(labels are keyed by source item id; evaluate the unlabelled build)"
        )
    if rejected and not src.isin(rejected).any():
        raise NabenchError(
            "report --labels: no evaluated na_keyed item is labelled not applicable, though "
            f"{len(rejected)} label(s) say so: these runs are of a labelled (already filtered) "
            "build; evaluate the unlabelled build"
        )
    return _per_subject(r, labelled, applicable)


def _per_subject(r: pd.DataFrame, labelled: set[str], applicable: set[str]) -> pd.DataFrame:
    src = r["source_id"].astype(str)
    frame = pd.DataFrame(
        {
            "run": r["run"].astype(str).to_numpy(),
            "subject": r["subject"].astype(object).fillna("(none)").to_numpy(),
            "hit": r["correct"].to_numpy(np.float64),  # accuracy: an invalid answer is wrong
            "kept": src.isin(applicable).to_numpy(),
            "labelled": src.isin(labelled).to_numpy(),
        }
    )
    frame["unlabelled"] = ~frame["labelled"]
    frame["full_hit"] = frame["hit"].where(frame["labelled"])
    frame["kept_hit"] = frame["hit"].where(frame["kept"])
    out = frame.groupby(["run", "subject"], sort=True).agg(
        n_full=("labelled", "sum"),
        n_filtered=("kept", "sum"),
        n_unlabelled=("unlabelled", "sum"),
        acc_full=("full_hit", "mean"),
        acc_filtered=("kept_hit", "mean"),  # NaN where the filter keeps nothing
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        out.insert(3, "filter_rate", 1.0 - out["n_filtered"] / out["n_full"])
    return out.reset_index()


def _filter_correlation(scope: str, subjects: pd.DataFrame, note: str = "") -> dict[str, object]:
    kept = subjects[subjects["filter_rate"] < FILTER_RATE_BELOW]
    row: dict[str, object] = {"scope": scope, "n_subjects": len(kept),
                              "n_subjects_left_out": len(subjects) - len(kept)}  # fmt: skip
    x = kept["acc_full"].to_numpy(np.float64)
    y = kept["acc_filtered"].to_numpy(np.float64)

    def without_r(reason: str) -> dict[str, object]:
        return {**row, "note": "; ".join(filter(None, [note, reason]))}

    if len(kept) < 3:
        return without_r("fewer than 3 subjects under the filter-rate cut")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return without_r("constant accuracies")
    pr = sps.pearsonr(x, y)
    return {**row, "pearson_r": float(pr.statistic), "pearson_p": float(pr.pvalue), "note": note}


_NEEDS_LABELS = "needs report --labels"


def _unlabelled_note(per: pd.DataFrame) -> str:
    n = int(per["n_unlabelled"].sum())
    return f"{n} evaluated item(s) without a label left out" if n else ""


def _mean_row(results: Results, labels: pd.DataFrame) -> dict[str, object]:
    """The model mean per subject over the labelled items every model run answered, so that
    each subject's mean is over one item set; a run whose every answer is invalid measured
    nothing and is left out, as of the panel."""
    r = _na_keyed_responses(results)
    gone = unmeasured(r)
    said = [f"left out run(s) {', '.join(gone)}: every answer invalid"] if gone else []
    r = r[~r["run"].isin(gone)]
    src = r["source_id"].astype(str)
    items = [set(src[(r["run"] == run).to_numpy()]) for run in r["run"].unique()]
    labelled, applicable, _ = _label_sets(labels)
    common = set.intersection(labelled, *items) if items else set()
    if not common:
        note = "; ".join([*said, "no labelled item every run answered"])
        return {"scope": MEAN_SCOPE, "note": note}
    per = _per_subject(r[src.isin(common).to_numpy()], labelled, applicable)
    mean = per.groupby("subject", sort=True)[["acc_full", "acc_filtered", "filter_rate"]].mean()
    partial = any(len(s & labelled) != len(common) for s in items)
    said += [f"on the {len(common)} labelled item(s) every run answered"] if partial else []
    return _filter_correlation(MEAN_SCOPE, mean, "; ".join(said))


MEAN_SCOPE = "mean over models"


def _full_vs_filtered(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    if ctx.labels is None:
        return pd.DataFrame([{"scope": "all", "note": _NEEDS_LABELS}], columns=_FILTER_COLS)
    per = na_filter_subjects(ctx.results, ctx.labels)
    rows = [
        _filter_correlation(str(run), g, _unlabelled_note(g))
        for run, g in per.groupby("run", sort=True)
    ]
    rows.append(_mean_row(ctx.results, ctx.labels))
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


def paper_conditions(spec: ReportPreset, evaluated: Sequence[str]) -> list[str]:
    """The configs Tables 1–2 and the ANOVA compare: the preset's conditions that were
    evaluated (the paper's three, whatever else was), or every evaluated one."""
    if spec.conditions is None:
        return list(evaluated)
    return [c for c in spec.conditions if c in set(evaluated)]


def condition_notes(protocol: Protocol | None, evaluated: Sequence[str]) -> list[str]:
    """A line when a condition the preset's paper compares was not evaluated."""
    if protocol is None or protocol.report is None or protocol.report.conditions is None:
        return []
    missing = [c for c in protocol.report.conditions if c not in set(evaluated)]
    if not missing:
        return []
    kept = paper_conditions(protocol.report, evaluated)
    return [
        f"protocol {protocol.name}: condition(s) {', '.join(missing)} not evaluated; its "
        f"Tables 1-2 and ANOVA compare {', '.join(kept) or 'nothing'} only"
    ]


def paper_anova(protocol: Protocol | None) -> str | None:
    """The paper table that is `tables/anova.csv` under this preset: its ANOVA under the
    paper's own (first) category grouping; None without one."""
    spec = None if protocol is None else protocol.report
    if spec is None or "anova_by_category" not in spec.tables:
        return None
    return f"{_OUTPUT_NAME['anova_by_category']}_{spec.categories[0]}"


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
    ctx = PaperContext(tables, panels, paper_conditions(spec, configs), results, spec, labels)
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
