"""A paper's own tables in `nabench report --protocol NAME`: the preset's `report.tables`
name them, one function each in `PAPER_TABLES`; a table marked per grouping is computed under
every category grouping the preset lists (``<name>_<grouping>``).

The NA study (`na-paper`), each needing ≥ 5 models like every panel statistic:

* ``paper_table1_<g>``: discrimination index per category × variant: mean and SD of the
  per-item D of `discrimination_table` over the category's items;
* ``paper_table2_<g>``: KR-20 per category × variant as the mean ± SD over the category's
  subjects (`nabench.stats.paper_tables.kr20_mean_sd_by_category`);
* ``anova_<g>``: the per-category ANOVA of per-subject KR-20 across variants;
* ``paper_table3``: accuracy per NA phrasing per model (the report's `phrasing` table).

"Artifacts or Abduction" (`artifacts-paper`):

* ``baseline_t_test``: per model run × config, an independent two-sample t-test (scipy
  ``ttest_ind``) of the per-item scores against the per-item scores of the majority
  baseline (1 where the gold letter is the config's most frequent one), significant at
  p < 0.00005 as the paper;
* ``qi_choices_only_kappa``: per model run, Cohen's κ between its choices-only and its
  two-step question-inference (``qi_step2``) predictions on their common items (an invalid
  answer is its own label).

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

from nabench.evaluation.categories import Grouping
from nabench.evaluation.panel import Panel, anova_table
from nabench.evaluation.results import Results, category_of
from nabench.schemas.protocol import Protocol
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


def _model_responses(results: Results) -> pd.DataFrame:
    r = results.responses
    return r[r["run"].isin(results.models)]


def _baseline_t_test(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    out = []
    for (run, config), g in _model_responses(ctx.results).groupby(["run", "config"], sort=True):
        scores = g["score"].to_numpy(np.float64)
        majority = g["gold"].value_counts().idxmax()
        base = (g["gold"] == majority).to_numpy(np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant samples: scipy warns, returns nan
            t, p = sps.ttest_ind(scores, base)
        t, p = float(t), float(p)
        out.append(
            {
                "run": run,
                "config": config,
                "n": len(g),
                "accuracy": float(scores.mean()),
                "majority_letter": majority,
                "majority_baseline": float(base.mean()),
                "t": t,
                "p_value": p,
                "significant": bool(not math.isnan(p) and p < ARTIFACTS_ALPHA and t > 0),
            }
        )
    cols = ["run", "config", "n", "accuracy", "majority_letter", "majority_baseline", "t",
            "p_value", "significant"]  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def _qi_kappa(ctx: PaperContext, grouping: Grouping) -> pd.DataFrame:
    r = _model_responses(ctx.results)
    out = []
    for run, g in r.groupby("run", sort=True):
        co = g[g["config"] == "choices_only"].set_index("id")["parsed"]
        qi = g[g["config"] == "qi_step2"].set_index("id")["parsed"]
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


PAPER_TABLES: dict[str, PaperTable] = {
    t.name: t
    for t in (
        PaperTable("discrimination_by_category_variant", True, _discrimination),
        PaperTable("kr20_mean_sd_over_subjects", True, _kr20_mean_sd),
        PaperTable("anova_by_category", True, _anova),
        PaperTable("accuracy_by_phrasing", False, _phrasing),
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
) -> dict[str, pd.DataFrame]:
    """The tables `protocol.report` asks for, from the report's own tables and panels."""
    spec = protocol.report
    if spec is None:
        return {}
    ctx = PaperContext(tables, panels, configs, results)
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
