"""Panel reliability over models only: KR-20, discrimination D, ANOVA, correlations.

Reference strategies (``oracle``, ``always-a``, …) are baselines, never panel members:
an oracle and a constant answer make KR-20 read 1.000 whatever the items are. The panel
of a config: its model runs whose items cover at least ``min_coverage`` of the largest
model run's items (default 1.0: all of them), less any run whose every answer there is
invalid; the items are those every panel run answered. Panel statistics need at least
:data:`MIN_MODELS` models; with fewer, every cell says ``needs ≥ 5 models`` instead of a
number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nabench.evaluation.results import ORIGINAL, Results, category_of, subject_labels
from nabench.stats.inference import anova_oneway, pearson, spearman
from nabench.stats.reliability import discrimination_index, kr20, kr20_by_group

__all__ = [
    "EXACT_SPEARMAN_MAX_N",
    "MIN_MODELS",
    "NEEDS_MODELS",
    "Panel",
    "anova_table",
    "correlation_table",
    "discrimination_table",
    "kr20_category_table",
    "kr20_subject_table",
    "make_panel",
    "panel_table",
    "panels_ready",
    "unmeasured",
    "unmeasured_pairs",
]

MIN_MODELS = 5
NEEDS_MODELS = f"needs ≥ {MIN_MODELS} models"
# Up to this many points the Spearman p-value is exact (all n! pairings enumerated).
EXACT_SPEARMAN_MAX_N = 8


@dataclass
class Panel:
    """Model runs × items score matrix of one config."""

    config: str
    runs: list[str]
    ids: list[str]
    subjects: list[str]
    scores: np.ndarray  # runs × items
    left_out: list[str] = field(default_factory=list)

    @property
    def categories(self) -> list[str]:
        # Once per distinct subject: the per-item property access was quadratic before.
        cats = {s: category_of(s) for s in set(self.subjects)}
        return [cats[s] for s in self.subjects]

    @property
    def enough(self) -> bool:
        return len(self.runs) >= MIN_MODELS


def panels_ready(panels: Sequence[Panel]) -> bool:
    """Whether some config's panel has the models its statistics need: counted over the
    panel, since a run left out of it (all invalid, too few items) is no member."""
    return any(p.enough for p in panels)


def unmeasured(responses: pd.DataFrame) -> list[str]:
    """Runs of ``responses`` (one config's rows) whose every answer there is invalid: they
    measured nothing, so the config's panel and every statistic pooling models leave them
    out (an all-wrong row would widen the spread of totals and raise KR-20)."""
    none_valid = responses.groupby("run", sort=False, observed=True)["invalid"].all()
    return [str(run) for run, v in none_valid.items() if v]


def unmeasured_pairs(responses: pd.DataFrame) -> set[tuple[str, str]]:
    """(run, config) of every run of ``responses`` that measured nothing in that config."""
    configs = responses.groupby("config", sort=False, observed=True)
    return {(run, str(c)) for c, rows in configs for run in unmeasured(rows)}


def make_panel(results: Results, config: str, min_coverage: float = 1.0) -> Panel | None:
    """The panel of ``config`` over model runs; None with no model run or no common item."""
    models = set(results.models)
    r = results.responses
    r = r[(r["config"] == config) & r["run"].isin(models)]
    sizes = r.groupby("run", sort=False, observed=True).size()
    measured = sizes[~sizes.index.isin(unmeasured(r))]  # members.panel_notes says so
    if measured.empty:
        return None
    keep = [str(run) for run, n in measured.items() if n >= min_coverage * measured.max()]
    left_out = [str(run) for run in sizes.index if run not in keep]
    r = r[r["run"].isin(keep)]
    # one pivot instead of a per-run lookup: items × runs, items all kept runs answered
    # 0/1 correct outcomes (KR-20 is defined for dichotomous items; an invalid answer is wrong)
    wide = r.pivot(index="id", columns="run", values="correct").astype(np.float64).dropna()
    first = r[r["run"] == keep[0]]
    in_all = pd.Index(first["id"]).isin(wide.index)  # the first run's item order
    if not in_all.any():
        return None
    first = first[in_all]
    ids = first["id"].tolist()
    mat = wide.loc[ids, keep].to_numpy(np.float64).T
    subjects = subject_labels(first["subject"]).astype(str).tolist()
    return Panel(config, keep, ids, subjects, mat, left_out)


def panel_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """Per config: panel size, KR-20 over all items, mean D (or why there is none)."""
    out = []
    for p in panels:
        ok = p.enough
        d = discrimination_index(p.scores) if ok and len(p.runs) >= 2 else None
        out.append(
            {
                "config": p.config,
                "n_models": len(p.runs),
                "n_items": len(p.ids),
                "kr20": kr20(p.scores) if ok else math.nan,
                "mean_D": float(d.mean()) if d is not None else math.nan,
                "note": "" if ok else NEEDS_MODELS,
                "models": ", ".join(p.runs),
                "left_out": ", ".join(p.left_out),
            }
        )
    cols = ["config", "n_models", "n_items", "kr20", "mean_D", "note", "models", "left_out"]
    return pd.DataFrame(out, columns=cols)


def discrimination_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """Per item of each panel with enough models: mean score and discrimination index D."""
    cols = ["config", "id", "subject", "category", "p", "D"]
    frames = [
        pd.DataFrame(
            {
                "config": p.config,
                "id": p.ids,
                "subject": p.subjects,
                "category": p.categories,
                "p": p.scores.mean(axis=0),
                "D": discrimination_index(p.scores),
            },
            columns=cols,
        )
        for p in panels
        if p.enough
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def kr20_category_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """KR-20 per config (variant) × MMLU category, with the category's item count."""
    out = []
    for p in panels:
        cats = p.categories
        values = kr20_by_group(p.scores, cats)
        counts = pd.Series(cats).value_counts()
        for cat, v in values.items():
            out.append(
                {
                    "config": p.config,
                    "category": cat,
                    "k": int(counts[cat]),
                    "n_models": len(p.runs),
                    "kr20": v if p.enough else math.nan,
                    "note": "" if p.enough else NEEDS_MODELS,
                }
            )
    return pd.DataFrame(out, columns=["config", "category", "k", "n_models", "kr20", "note"])


def kr20_subject_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """KR-20 per config × subject (the observations of the per-category ANOVA)."""
    out = []
    for p in panels:
        if not p.enough:
            continue
        counts = pd.Series(p.subjects).value_counts()
        for subject, v in kr20_by_group(p.scores, p.subjects).items():
            out.append(
                {
                    "config": p.config,
                    "category": category_of(subject),
                    "subject": subject,
                    "k": int(counts[subject]),
                    "kr20": v,
                }
            )
    return pd.DataFrame(out, columns=["config", "category", "subject", "k", "kr20"])


def _anova_row(cat: str, g: pd.DataFrame) -> dict[str, Any]:
    groups = [gg["kr20"].dropna().to_numpy(np.float64) for _, gg in g.groupby("config", sort=False)]
    groups = [v for v in groups if v.size]
    n_values = int(sum(v.size for v in groups))
    row: dict[str, Any] = {
        "category": cat,
        "variants": len(groups),
        "values": n_values,
        "F": math.nan,
        "p_value": math.nan,
        "df_between": None,
        "df_within": None,
        "note": "",
    }
    if len(groups) < 2 or n_values <= len(groups):
        row["note"] = "too few subject KR-20 values"
        return row
    res = anova_oneway(*groups)
    row.update(F=res.f, p_value=res.p_value, df_between=res.df_between, df_within=res.df_within)
    return row


def anova_table(kr20_subjects: pd.DataFrame, configs: Sequence[str]) -> pd.DataFrame:
    """One-way ANOVA (scipy ``f_oneway``) of per-subject KR-20 across variants, per category."""
    kr = kr20_subjects[kr20_subjects["config"].isin(list(configs))]
    out = [_anova_row(str(cat), g) for cat, g in kr.groupby("category", sort=True)]
    cols = ["category", "variants", "values", "F", "p_value", "df_between", "df_within", "note"]
    return pd.DataFrame(out, columns=cols)


def _correlation_row(variant: str, both: pd.DataFrame) -> dict[str, Any]:
    row: dict[str, Any] = {"variant": variant, "n_models": len(both)}
    if len(both) < MIN_MODELS:
        return {**row, "note": NEEDS_MODELS}
    x = both[ORIGINAL].to_numpy(np.float64)
    y = both[variant].to_numpy(np.float64)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {**row, "note": "constant accuracies"}
    pr, sr = pearson(x, y), spearman(x, y, exact_max_n=EXACT_SPEARMAN_MAX_N)
    return {
        **row,
        "pearson_r": pr.r,
        "pearson_p": pr.p_value,
        "spearman_rho": sr.r,
        "spearman_p": sr.p_value,
        "spearman_p_method": sr.method,
        "note": "",
    }


def correlation_table(
    configs: pd.DataFrame,
    variants: Sequence[str],
    models: Sequence[str],
    panels: Sequence[Panel] = (),
) -> pd.DataFrame:
    """Pearson and Spearman (scipy) of models' accuracy on original vs each variant.

    Models only; runs left out of either config's panel (partial coverage) are not used.
    """
    cols = [
        "variant",
        "n_models",
        "pearson_r",
        "pearson_p",
        "spearman_rho",
        "spearman_p",
        "spearman_p_method",
        "note",
    ]
    acc = configs[configs["run"].isin(list(models))].pivot(
        index="run", columns="config", values="accuracy"
    )
    if ORIGINAL not in acc.columns:
        return pd.DataFrame(columns=cols)
    left = {p.config: set(p.left_out) for p in panels}
    out = []
    for variant in variants:
        if variant not in acc.columns:
            continue
        skip = left.get(ORIGINAL, set()) | left.get(variant, set())
        both = acc.loc[~acc.index.isin(list(skip)), [ORIGINAL, variant]].dropna()
        out.append(_correlation_row(variant, both))
    return pd.DataFrame(out, columns=cols)
