"""PNG plots of a :class:`~nabench.evaluation.report.Report` (matplotlib, Agg backend).

Every plot has a title with its n, labelled axes, legends outside the bars, draws a
missing value as missing (an ``n/a`` mark), never as 0, and is at most a page wide
(``PAGE_WIDTH_IN`` inches at 110 dpi, legend included).

* ``original_vs_variant.png`` (the NA paper's Fig. 5): per run, accuracy on ``original``
  and on each variant over the same items, with 95 % Wilson intervals (baselines named).
* ``subject_drop_<variant>.png`` (Fig. 6): subjects ranked by the drop original →
  variant, mean over models, whiskers the range over models.
* ``confidence_change.png`` (Fig. 7): per subject, the change in mean confidence from
  ``original`` to ``na_keyed`` (loglik model runs), ranked.
* ``kr20_by_category.png``: KR-20 per MMLU category and variant (≥ 5 models only).
* ``choices_only_vs_majority.png``: choices-only accuracy vs the majority baseline.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nabench.evaluation.members import pooled_rows
from nabench.evaluation.report_data import Report
from nabench.stats.inference import wilson_interval

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["write_plots"]

_LABEL_CHARS = 36  # longer run names are cut in tick labels (the tables hold them whole)


def _short(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def _mark_missing(ax: Axes, x: float, y: float = 0.02, horizontal: bool = False) -> None:
    pos = (y, x) if horizontal else (x, y)
    ax.text(*pos, "n/a", ha="center", va="bottom", fontsize=7, color="0.4")


PAGE_WIDTH_IN = 7.5  # every plot fits a page (and report.html's column) at this width


def _with_wilson(points: list[tuple[float, int] | None]) -> tuple[np.ndarray, ...]:
    """(accuracy, low, high) arrays from (accuracy, n) pairs: 95 % Wilson intervals, which
    fit accuracy (0/1 per item); NaN where a point is missing."""
    acc, lo, hi = (np.full(len(points), np.nan) for _ in range(3))
    for i, pt in enumerate(points):
        if pt is not None:
            acc[i] = pt[0]
            lo[i], hi[i] = wilson_interval(pt[0] * pt[1], pt[1])
    return acc, lo, hi


def _accuracy_points(
    headline: pd.DataFrame, runs: list[str], variants: list[str]
) -> dict[str, tuple[np.ndarray, ...]]:
    """Per config (original first) per run: accuracy on the paired items with its interval;
    original from the run's first variant row (the items paired with that variant)."""
    idx = headline.set_index(["run", "config"])

    def point(r: str, v: str | None, col: str) -> tuple[float, int] | None:
        if v is None or (r, v) not in idx.index:
            return None
        return float(idx.loc[(r, v), col]), int(idx.loc[(r, v), "n"])

    first = {r: next((v for v in variants if (r, v) in idx.index), None) for r in runs}
    out = {"original": _with_wilson([point(r, first[r], "acc_original") for r in runs])}
    for v in variants:
        out[v] = _with_wilson([point(r, v, "acc_variant") for r in runs])
    return out


def _legend_above(ax: Axes, title: str) -> None:
    """Legend between the title and the axes, in as many columns as fit the axes' width
    (7 pt text, about 0.053 in per character), so the figure stays a page wide."""
    labels = ax.get_legend_handles_labels()[1]
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    column_in = 0.45 + 0.053 * max((len(x) for x in labels), default=1)
    ncol = max(1, min(3, int(width_in // column_in)))
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=ncol, fontsize=7, frameon=False)
    ax.set_title(title, pad=8 + 14 * -(-len(labels) // ncol))


def original_vs_variant(headline: pd.DataFrame, path: Path) -> Path | None:
    """Fig. 5: per run (one row each, models first), accuracy on original and on each
    variant over the same items, with 95 % Wilson intervals; a page wide whatever the
    number of runs and variants (the figure grows downwards)."""
    if headline.empty:
        return None
    variants = list(dict.fromkeys(headline["config"]))
    runs = list(dict.fromkeys(headline["run"]))
    roles = dict(zip(headline["run"], headline["role"], strict=False))
    points = _accuracy_points(headline, runs, variants)
    plt = _pyplot()
    # ~5 pt per point and a gap per run: 28 runs x 7 configs is a page tall
    height = 1.8 + len(runs) * (0.065 * len(points) + 0.06)
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, height))
    y = np.arange(len(runs))[::-1].astype(float)
    step = 0.8 / len(points)
    for j, (label, (acc, lo, hi)) in enumerate(points.items()):
        ys = y + 0.4 - step * (j + 0.5)
        err = np.vstack([acc - lo, hi - acc])
        ax.errorbar(acc, ys, xerr=err, fmt="o", ms=3.5, capsize=2, lw=1, label=label,
                    color="0.4" if label == "original" else None)  # fmt: skip
        for yi, val in zip(ys, acc, strict=True):
            if np.isnan(val):
                _mark_missing(ax, float(yi), horizontal=True)
    n = headline.groupby("run", sort=False)["n"].max()
    tag = {"baseline": " (baseline)", "model": ""}
    labels = [f"{_short(r)}{tag[roles[r]]} n={int(n[r])}" for r in runs]
    ax.set_yticks(y, labels, fontsize=7)
    # room for the labels inside the page width (7 pt text: at most 0.06 in per character)
    widest = max(len(label) for label in labels)
    fig.subplots_adjust(left=min(0.5, 0.03 + widest * 0.06 / PAGE_WIDTH_IN), right=0.97)
    ax.set(xlim=(-0.01, 1.01), xlabel="accuracy on the same items (95 % Wilson interval)")
    ax.grid(axis="x", color="0.9")
    _legend_above(ax, f"Accuracy on original vs each variant ({len(runs)} runs)")
    return _save(fig, path)


def subject_drop_ranking(subjects: pd.DataFrame, variant: str, path: Path) -> Path | None:
    """Fig. 6: subjects ranked by the mean drop over models, whiskers the model range;
    ``subjects``: the model rows a mean pools (`members.pooled_rows`)."""
    g = subjects[subjects["config"] == variant]
    if g.empty:
        return None
    agg = g.groupby("subject").agg(
        mean=("diff", "mean"), lo=("diff", "min"), hi=("diff", "max"), n=("n", "max")
    )
    agg = agg.sort_values("mean")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 0.28 * len(agg) + 1.8))
    y = np.arange(len(agg))
    err = [agg["mean"] - agg["lo"], agg["hi"] - agg["mean"]]
    colors = np.where(agg["mean"].to_numpy() >= 0, "tab:red", "tab:blue")
    ax.barh(y, agg["mean"], color=colors, xerr=err, capsize=2, ecolor="0.3")
    ax.set_yticks(
        y, [f"{s} (n={int(k)})" for s, k in zip(agg.index, agg["n"], strict=True)], fontsize=7
    )
    ax.axvline(0, color="k", lw=0.8)
    models = g["run"].nunique()
    ax.set(
        xlabel="accuracy drop original − variant (mean over models; whiskers: range)",
        ylabel="subject (n = paired items)",
        title=f"Subjects ranked by drop: original → {variant} ({models} model(s))",
    )
    return _save(fig, path)


def confidence_change(conf: pd.DataFrame, models: set[str], path: Path) -> Path | None:
    """Fig. 7: mean confidence change original → na_keyed per subject (loglik models)."""
    c = conf[conf["run"].isin(models)]
    if c.empty or c["change"].isna().all():
        return None
    agg = c.groupby("subject").agg(change=("change", "mean"), n=("n", "max")).sort_values("change")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 0.28 * len(agg) + 1.8))
    y = np.arange(len(agg))
    vals = agg["change"].to_numpy()
    ax.barh(y, np.nan_to_num(vals), color=np.where(vals < 0, "tab:blue", "tab:red"))
    for yi, v in zip(y, vals, strict=True):
        if np.isnan(v):
            _mark_missing(ax, float(yi), 0.0, horizontal=True)
    ax.set_yticks(
        y, [f"{s} (n={int(k)})" for s, k in zip(agg.index, agg["n"], strict=True)], fontsize=7
    )
    ax.axvline(0, color="k", lw=0.8)
    ax.set(
        xlabel="mean confidence on na_keyed − on original",
        ylabel="subject (n = items)",
        title=f"Confidence change per subject ({c['run'].nunique()} loglik model run(s))",
    )
    return _save(fig, path)


def kr20_bars(kr: pd.DataFrame, path: Path) -> Path | None:
    """KR-20 per category and variant; undefined values are marked n/a, not drawn as 0."""
    ok = kr[kr["note"] == ""] if not kr.empty else kr
    if ok.empty or ok["kr20"].isna().all():
        return None
    wide = ok.pivot(index="category", columns="config", values="kr20")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4.5))
    width = 0.8 / max(1, wide.shape[1])
    x = np.arange(len(wide))
    for j, cfg in enumerate(wide.columns):
        xs = x + (j - (wide.shape[1] - 1) / 2) * width
        vals = wide[cfg].to_numpy(np.float64)
        ax.bar(xs, vals, width, label=cfg)  # nan bars are not drawn
        for xi in xs[np.isnan(vals)]:
            _mark_missing(ax, float(xi))
    ax.set_xticks(x, wide.index)
    ax.axhline(0, color="k", lw=0.8)
    n_models = int(ok["n_models"].max())
    ax.set(ylabel="KR-20", xlabel="MMLU category")
    _legend_above(ax, f"KR-20 per category and variant ({n_models} models)")
    return _save(fig, path)


def choices_only_bars(configs: pd.DataFrame, path: Path) -> Path | None:
    co = configs[configs["config"] == "choices_only"]
    if co.empty:
        return None
    plt = _pyplot()
    x = np.arange(len(co))
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4.5))
    err = [co["accuracy"] - co["ci_low"], co["ci_high"] - co["accuracy"]]
    ax.bar(x - 0.2, co["accuracy"], 0.4, yerr=err, capsize=3, label="choices-only accuracy")
    ax.bar(x + 0.2, co["majority_baseline"], 0.4, label="majority baseline")
    labels = [f"{_short(r)}\n(n={n})" for r, n in zip(co["run"], co["n"], strict=True)]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=7 if len(co) > 8 else 9)
    ax.set(ylim=(0, 1), ylabel="accuracy", xlabel="run")
    _legend_above(ax, "Choices-only accuracy vs majority baseline")
    return _save(fig, path)


def write_plots(report: Report, out: Path) -> dict[str, Path]:
    """Every plot the report's tables support; name → written PNG path."""
    t = report.tables
    made: dict[str, Path | None] = {
        "original_vs_variant": original_vs_variant(t["headline"], out / "original_vs_variant.png"),
        "confidence_change": confidence_change(
            t["confidence"], set(report.results.models), out / "confidence_change.png"
        ),
        "kr20_by_category": kr20_bars(t["kr20_category"], out / "kr20_by_category.png"),
        "choices_only_vs_majority": choices_only_bars(
            t["configs"], out / "choices_only_vs_majority.png"
        ),
    }
    subj = pooled_rows(t["headline_subjects"], report.results)
    for variant in dict.fromkeys(subj["config"]):
        made[f"subject_drop_{variant}"] = subject_drop_ranking(
            subj, variant, out / f"subject_drop_{variant}.png"
        )
    return {k: v for k, v in made.items() if v is not None}
