"""PNG plots of a :class:`~nabench.evaluation.report.Report` (matplotlib, Agg backend).

* ``original_vs_variants.png``: one point per run (Wilson/bootstrap 95 % CI bars),
  accuracy on ``original`` (x) vs ``na_keyed`` and ``na_distractor`` (y), identity line.
* ``subject_drop_<variant>.png``: per-subject drop original → variant, mean over runs,
  ranked.
* ``choices_only_vs_majority.png``: choices-only accuracy vs the majority baseline per run
  (only when artifact results exist).
* ``kr20_by_category.png``: KR-20 per MMLU category, one bar per variant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from nabench.evaluation.report import Report

__all__ = ["write_plots"]

SCATTER_VARIANTS = ("na_keyed", "na_distractor")


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def scatter_original_vs_variants(configs: pd.DataFrame, path: Path) -> Path | None:
    variants = [v for v in SCATTER_VARIANTS if v in set(configs["config"])]
    if "original" not in set(configs["config"]) or not variants:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(variants), figsize=(5.2 * len(variants), 5), squeeze=False)
    idx = configs.set_index(["run", "config"])
    for ax, variant in zip(axes[0], variants, strict=True):
        runs = [
            r
            for r in dict.fromkeys(configs["run"])
            if (r, "original") in idx.index and (r, variant) in idx.index
        ]
        for run in runs:
            o, v = idx.loc[(run, "original")], idx.loc[(run, variant)]
            ax.errorbar(
                o["accuracy"],
                v["accuracy"],
                xerr=[[o["accuracy"] - o["ci_low"]], [o["ci_high"] - o["accuracy"]]],
                yerr=[[v["accuracy"] - v["ci_low"]], [v["ci_high"] - v["accuracy"]]],
                fmt="o",
                capsize=3,
                label=run,
            )
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="identity")
        ax.set(
            xlim=(0, 1.02),
            ylim=(0, 1.02),
            xlabel="accuracy on original",
            ylabel=f"accuracy on {variant}",
            title=f"original vs {variant}",
        )
        ax.set_aspect("equal")
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def subject_drop_ranking(
    drops: pd.DataFrame, variant: str, path: Path, top: int = 30
) -> Path | None:
    g = drops[drops["variant"] == variant]
    if g.empty:
        return None
    mean = g.groupby("subject")["drop"].mean().sort_values(ascending=True).tail(top)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(mean) + 1.5))
    colors = np.where(mean.to_numpy() >= 0, "tab:red", "tab:blue")
    ax.barh(mean.index, mean.to_numpy(), color=colors)
    ax.axvline(0, color="k", lw=0.8)
    ax.set(
        xlabel="accuracy drop (original − variant), mean over runs",
        title=f"Per-subject drop: original → {variant}",
    )
    return _save(fig, path)


def choices_only_bars(configs: pd.DataFrame, path: Path) -> Path | None:
    co = configs[configs["config"] == "choices_only"]
    if co.empty:
        return None
    plt = _pyplot()
    x = np.arange(len(co))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(co) + 2), 4.5))
    err = [co["accuracy"] - co["ci_low"], co["ci_high"] - co["accuracy"]]
    ax.bar(x - 0.2, co["accuracy"], 0.4, yerr=err, capsize=3, label="choices-only accuracy")
    ax.bar(x + 0.2, co["majority_baseline"], 0.4, label="majority baseline")
    ax.set_xticks(x, co["run"], rotation=30, ha="right")
    ax.set(ylim=(0, 1), ylabel="accuracy", title="Choices-only vs majority baseline")
    ax.legend()
    return _save(fig, path)


def kr20_bars(kr: pd.DataFrame, path: Path) -> Path | None:
    if kr.empty or kr["kr20"].isna().all():
        return None
    wide = kr.pivot(index="category", columns="config", values="kr20")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(wide) + 3), 4.5))
    width = 0.8 / max(1, wide.shape[1])
    x = np.arange(len(wide))
    for j, cfg in enumerate(wide.columns):
        ax.bar(x + (j - (wide.shape[1] - 1) / 2) * width, wide[cfg].fillna(0.0), width, label=cfg)
    ax.set_xticks(x, wide.index)
    ax.axhline(0, color="k", lw=0.8)
    ax.set(ylabel="KR-20", title="KR-20 per MMLU category and variant (n/a drawn as 0)")
    ax.legend(fontsize=7)
    return _save(fig, path)


def write_plots(report: Report, out: Path) -> dict[str, Path]:
    """Every plot the report's tables support; name → written PNG path."""
    t = report.tables
    made: dict[str, Path | None] = {
        "original_vs_variants": scatter_original_vs_variants(
            t["configs"], out / "original_vs_variants.png"
        ),
        "choices_only_vs_majority": choices_only_bars(
            t["configs"], out / "choices_only_vs_majority.png"
        ),
        "kr20_by_category": kr20_bars(t["kr20_category"], out / "kr20_by_category.png"),
    }
    if not t["drops"].empty:
        for variant in dict.fromkeys(t["drops"]["variant"]):
            made[f"subject_drop_{variant}"] = subject_drop_ranking(
                t["drops"], variant, out / f"subject_drop_{variant}.png"
            )
    return {k: v for k, v in made.items() if v is not None}
