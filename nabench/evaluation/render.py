"""``report.md``: the report's tables as Markdown, laid out by ``templates/report.md.jinja``.

Cells are formatted by :mod:`nabench.core.cells` (the one formatter of every table:
floats to 3 decimals, missing as ``n/a``, p-values in significant digits and one that
underflowed as ``< 1e-300``); Markdown escapes the pipes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nabench.core.cells import fmt_cell
from nabench.core.templates import markdown_environment
from nabench.evaluation.members import pooled_rows
from nabench.evaluation.panel import MIN_MODELS, NEEDS_MODELS, panels_ready
from nabench.evaluation.paper_report import paper_anova
from nabench.evaluation.report_data import Report
from nabench.evaluation.tables import (
    RUN_COLUMNS_MD,
    headline_columns,
    runs_table,
    shortcut_wins,
    with_ci,
)

__all__ = ["md_table", "render_markdown"]

TEMPLATES = Path(__file__).parent / "templates"


def _templates() -> Any:
    return markdown_environment(TEMPLATES, trim_blocks=True)


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A pipe table of ``df`` (floats to 3 decimals, p-values exact, nan as n/a)."""
    cols = [str(c) for c in (columns or df.columns)]
    if df.empty:
        return "_(none)_\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df[cols].itertuples(index=False):
        cells = [fmt_cell(c, v).replace("|", "\\|") for c, v in zip(cols, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _subject_sections(report: Report, top: int) -> list[dict[str, str]]:
    subj = pooled_rows(report.tables["headline_subjects"], report.results)
    out = []
    for variant, g in subj.groupby("config", sort=False):
        mean = (
            g.groupby("subject")
            .agg(
                n=("n", "max"),
                models=("run", "nunique"),
                mean_drop=("diff", "mean"),
                models_fdr_significant=("significant_fdr", "sum"),
            )
            .sort_values(["mean_drop", "subject"], ascending=[False, True])
            .reset_index()
        )
        mean.insert(0, "rank", np.arange(1, len(mean) + 1))
        out.append({"variant": str(variant), "table": md_table(mean.head(top))})
    return out


def _panel_context(report: Report) -> dict[str, Any]:
    t = report.tables
    n_models = len(report.results.models)
    ctx: dict[str, Any] = {
        "min_models": MIN_MODELS,
        "n_models": n_models,
        "enough": panels_ready(report.panels),
        "needs": NEEDS_MODELS,
        "panel": md_table(t["panel"]),
    }
    kc = t["kr20_category"]
    ok = kc[kc["note"] == ""] if not kc.empty else kc
    ctx["kr20_wide"] = (
        md_table(ok.pivot(index="category", columns="config", values="kr20").reset_index())
        if not ok.empty
        else ""
    )
    ctx["kr20_k"] = (
        md_table(ok.pivot(index="category", columns="config", values="k").reset_index())
        if not ok.empty
        else ""
    )
    ctx["anova"] = md_table(t["anova"]) if not t["anova"].empty else ""
    ctx["anova_note"] = _anova_note(report)
    disc = t["discrimination"]
    ctx["discrimination"] = (
        ""
        if disc.empty
        else md_table(
            disc.groupby("config", sort=False)["D"]
            .agg(
                n="size",
                mean="mean",
                median="median",
                min="min",
                max="max",
                negative=lambda d: int((d < 0).sum()),
            )
            .reset_index()
        )
    )
    return ctx


def _anova_note(report: Report) -> str:
    """Which ANOVA the report shows: a paper preset's own (its conditions and grouping)."""
    p = report.protocol
    if p is None or p.report is None or paper_anova(p) is None:
        return ""
    conditions = ", ".join(p.report.conditions or ["every evaluated config"])
    return (
        f"As the `{p.name}` protocol states: over its conditions ({conditions}) under the "
        f"`{p.report.categories[0]}` category grouping."
    )


def render_markdown(report: Report, top_subjects: int = 10) -> str:
    """The report as Markdown, readable on its own."""
    t = report.tables
    head = t["headline"]
    co = t["configs"][t["configs"]["config"] == "choices_only"]
    cfg_cols = [
        "run",
        "role",
        "n",
        "accuracy",
        "ci_low",
        "ci_high",
        "ci_method",
        "invalid_rate",
        "score",
        "majority_baseline",
        "gain",
        "p_value",
        "test",
    ]
    ctx = {
        "runs": md_table(runs_table(report.results), RUN_COLUMNS_MD),
        "notes": report.notes,
        "models": report.results.models,
        "baselines": report.results.baselines,
        "headline": md_table(with_ci(head), headline_columns()) if not head.empty else "",
        "worst_case": ""
        if t["worst_case"].empty
        else md_table(with_ci(t["worst_case"]), headline_columns("variants")),
        "redux": ""
        if t.get("headline_redux") is None or t["headline_redux"].empty
        else md_table(with_ci(t["headline_redux"]), headline_columns("config", "redux")),
        "categories": ""
        if t["headline_categories"].empty
        else md_table(with_ci(t["headline_categories"]), headline_columns("config", "category")),
        "configs": [
            {"config": str(c), "table": md_table(g, cfg_cols)}
            for c, g in t["configs"].groupby("config", sort=False)
        ],
        "subjects": _subject_sections(report, top_subjects),
        "shortcuts_run": not t["shortcuts"].empty,
        "shortcuts": md_table(shortcut_wins(t["shortcuts"])),
        "top_subjects": top_subjects,
        "min_coverage": f"{report.min_coverage:.0%}",
        "panel": _panel_context(report),
        "correlations": md_table(t["correlations"]) if not t["correlations"].empty else "",
        "phrasing": md_table(t["phrasing"]) if not t["phrasing"].empty else "",
        "phrasing_spread": "spread" in t["phrasing"].columns,
        "confidence": md_table(t["confidence"]) if not t["confidence"].empty else "",
        "choices_only": md_table(
            co,
            [
                "run",
                "role",
                "n",
                "accuracy",
                "ci_low",
                "ci_high",
                "majority_baseline",
                "gain",
                "p_value",
            ],
        )
        if not co.empty
        else "",
        "plots": {k: v.as_posix() for k, v in report.plots.items()},
        "paper": _paper_context(report),
    }
    return str(_templates().get_template("report.md.jinja").render(**ctx))


def _paper_context(report: Report) -> dict[str, Any] | None:
    """The preset's paper tables (``--protocol``), each as Markdown (empty: no rows)."""
    if report.protocol is None or not report.paper:
        return None
    t = report.tables
    return {
        "title": f"Tables of the `{report.protocol.name}` protocol",
        "description": report.protocol.description,
        "empty_reason": f"the panel needs ≥ {MIN_MODELS} models",
        "tables": [
            {"name": name, "table": md_table(t[name]) if not t[name].empty else ""}
            for name in report.paper
        ],
    }
