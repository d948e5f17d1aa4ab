"""``report.md``: the report's tables as Markdown, laid out by ``templates/report.md.jinja``.

Numbers are formatted here (floats to 3 decimals, missing as ``n/a``); p-values keep
their exact value in significant digits (``2.4e-07``, never ``0.000``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nabench.core.templates import markdown_environment
from nabench.evaluation.panel import MIN_MODELS, NEEDS_MODELS

if TYPE_CHECKING:
    from nabench.evaluation.report import Report

__all__ = ["fmt_p", "fmt_value", "md_table", "render_markdown"]

TEMPLATES = Path(__file__).parent / "templates"
HEADLINE_MD = [
    "run",
    "config",
    "n",
    "acc_original",
    "acc_variant",
    "diff",
    "diff_ci",
    "rel_drop",
    "rel_drop_ci",
    "mcnemar_p",
    "orig_only_correct",
    "variant_only_correct",
]


def _templates() -> Any:
    return markdown_environment(TEMPLATES, trim_blocks=True)


def fmt_p(v: object) -> str:
    """A p-value: 3 significant digits, scientific below 0.001, ``0`` only when exact."""
    if v is None or (isinstance(v, float | np.floating) and math.isnan(float(v))):
        return "n/a"
    f = float(v)  # type: ignore[arg-type]
    if f == 0.0:
        return "0 (exact)"
    return f"{f:.2e}" if f < 1e-3 else f"{f:.3g}"


def fmt_value(v: object, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        if math.isnan(f):
            return "n/a"
        if f != 0.0 and abs(f) < 10 ** (-digits):
            return f"{f:.1e}"
        return f"{f:.{digits}f}"
    return str(v).replace("|", "\\|")


def _is_p(col: str) -> bool:
    return col == "p_value" or col.endswith("_p") or col.startswith("p_value")


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A pipe table of ``df`` (floats to 3 decimals, p-values exact, nan as n/a)."""
    cols = [str(c) for c in (columns or df.columns)]
    if df.empty:
        return "_(none)_\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df[cols].itertuples(index=False):
        cells = [fmt_p(v) if _is_p(c) else fmt_value(v) for c, v in zip(cols, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _with_ci(df: pd.DataFrame) -> pd.DataFrame:
    def ci(lo: pd.Series, hi: pd.Series) -> pd.Series:
        return pd.Series(
            [f"[{fmt_value(a)}, {fmt_value(b)}]" for a, b in zip(lo, hi, strict=True)],
            index=df.index,
            dtype=object,
        )

    return df.assign(
        diff_ci=ci(df["diff_low"], df["diff_high"]),
        rel_drop_ci=ci(df["rel_drop_low"], df["rel_drop_high"]),
    )


def _subject_sections(report: Report, top: int) -> list[dict[str, str]]:
    subj = report.tables["headline_subjects"]
    subj = subj[subj["role"] == "model"]
    out = []
    for variant, g in subj.groupby("config", sort=False):
        mean = (
            g.groupby("subject")
            .agg(n=("n", "max"), models=("run", "nunique"), mean_drop=("diff", "mean"))
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
        "enough": n_models >= MIN_MODELS,
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


def _runs_table(report: Report) -> pd.DataFrame:
    s = report.results.summaries
    roles = report.results.roles()
    runs = (
        s.groupby("run", sort=False)
        .agg(
            model=("model", "first"),
            mode=("mode", "first"),
            backend=("backend", "first"),
            configs=("config", lambda c: ", ".join(c)),
        )
        .reset_index()
    )
    runs.insert(1, "role", runs["run"].map(roles))
    return runs


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
        "majority_baseline",
        "gain",
        "p_value",
        "test",
    ]
    ctx = {
        "runs": md_table(_runs_table(report)),
        "models": report.results.models,
        "baselines": report.results.baselines,
        "headline": md_table(_with_ci(head), HEADLINE_MD) if not head.empty else "",
        "worst_case": ""
        if t["worst_case"].empty
        else md_table(_with_ci(t["worst_case"]), [*HEADLINE_MD[:1], "variants", *HEADLINE_MD[2:]]),
        "redux": ""
        if t.get("headline_redux") is None or t["headline_redux"].empty
        else md_table(_with_ci(t["headline_redux"]), [*HEADLINE_MD[:2], "redux", *HEADLINE_MD[2:]]),
        "categories": ""
        if t["headline_categories"].empty
        else md_table(
            _with_ci(t["headline_categories"]), [*HEADLINE_MD[:2], "category", *HEADLINE_MD[2:]]
        ),
        "configs": [
            {"config": str(c), "table": md_table(g, cfg_cols)}
            for c, g in t["configs"].groupby("config", sort=False)
        ],
        "subjects": _subject_sections(report, top_subjects),
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
