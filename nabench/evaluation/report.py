"""`nabench report`: per-config accuracy tables and panel reliability over eval results.

Input: folders written by `nabench eval` (an ``--out`` root holding ``<run>/`` folders,
or one ``<run>/`` folder). Every number is recomputed from the responses parquet files;
the summary JSON files only supply run metadata.

Statistical conventions (also printed at the end of the report):

* Accuracy = mean per-item score (invalid outputs score ``invalid_credit``). 95 % CIs:
  Wilson (exact for 0/1 scores) and the percentile bootstrap (2,000 resamples, seed 0);
  the headline CI is Wilson when every score is 0 or 1, bootstrap otherwise.
* Majority baseline = share of the most frequent gold letter in the run's items of that
  config; the gain over it is tested one-sided (H1: accuracy > baseline) with
  :func:`baseline_test` (exact binomial for 0/1 scores, one-sample t for partial credit).
* Drop original → variant per subject = accuracy on ``original`` minus accuracy on the
  variant, over the items the run answered in both configs; ranked by the drop.
* The panel of a config: its runs whose items cover at least ``min_coverage`` of the
  largest run's items (default 1.0: all of them); the items are those every panel run
  answered. Runs left out are listed. Discrimination D per item and KR-20 use the
  panel's runs × items score matrix (:mod:`nabench.stats.reliability`: population
  variances, 27 % groups); needs ≥ 2 runs (KR-20 needs varying totals, else n/a).
* KR-20 per MMLU category (:func:`mmlu_category`; subjects outside MMLU fall into
  ``non_mmlu``) and variant. The ANOVA per category compares variants, taking as the
  observations of a variant the KR-20 values of the category's subjects in that variant
  (subjects with undefined KR-20 dropped); it needs ≥ 2 variants and more values than
  variants.
* Pearson and Spearman correlations between runs' accuracies on ``original`` and on each
  variant (one point per run present in both and not left out of either panel;
  two-sided p; ≥ 3 runs to be informative).
* NA-phrasing sensitivity: each run's accuracy on every ``na_keyed*`` config, with the
  max − min spread across phrasings.
* Confidence change (loglik runs): mean renormalised probability of the chosen option per
  subject, ``na_keyed`` minus ``original``, over items answered in both.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nabench.core.errors import NabenchError
from nabench.evaluation.categories import UnknownSubjectError, mmlu_category
from nabench.evaluation.plots import write_plots
from nabench.evaluation.scoring import baseline_test, majority_baseline
from nabench.llm import write_json_atomic
from nabench.stats.inference import accuracy_ci, anova_oneway, json_safe, pearson, spearman
from nabench.stats.reliability import discrimination_index, kr20, kr20_by_group

__all__ = [
    "NON_MMLU",
    "Panel",
    "Report",
    "Results",
    "build_report",
    "category_of",
    "load_results",
    "make_panel",
    "write_report",
]

ORIGINAL = "original"
NA_KEYED = "na_keyed"
NON_MMLU = "non_mmlu"
_RESPONSE_COLUMNS = ["id", "subject", "score", "correct", "invalid", "confidence", "gold"]


def category_of(subject: object) -> str:
    """MMLU category of a subject, ``non_mmlu`` for anything else (None, ARC, …)."""
    if not isinstance(subject, str):
        return NON_MMLU
    try:
        return mmlu_category(subject)
    except UnknownSubjectError:
        return NON_MMLU


# ---------------------------------------------------------------------------- loading


@dataclass
class Results:
    """Eval outputs: one summary row per (run, config), responses in long form."""

    summaries: pd.DataFrame
    responses: pd.DataFrame

    @property
    def runs(self) -> list[str]:
        return list(dict.fromkeys(self.summaries["run"]))

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(self.summaries["config"]))


def _summary_files(path: Path) -> list[Path]:
    if not path.exists():
        raise NabenchError(f"results folder not found: {path}")
    direct = sorted(path.glob("*.summary.json"))
    return direct if direct else sorted(path.glob("*/*.summary.json"))


def load_results(paths: Sequence[str | Path]) -> Results:
    """Read every ``<run>/<config>.summary.json`` + parquet under ``paths``."""
    rows: list[dict[str, Any]] = []
    frames: list[pd.DataFrame] = []
    seen: dict[tuple[str, str], Path] = {}
    for p in paths:
        files = _summary_files(Path(p))
        if not files:
            raise NabenchError(f"no *.summary.json results under {p}")
        for f in files:
            summary = json.loads(f.read_text("utf-8"))
            run = f.parent.name
            config = summary["config"]
            if (run, config) in seen:
                raise NabenchError(
                    f"run {run!r} config {config!r} found twice: {seen[run, config]}, {f}"
                )
            seen[run, config] = f
            parquet = f.with_name(f"{config}.parquet")
            if not parquet.is_file():
                raise NabenchError(f"{f} has no responses file {parquet.name}")
            df = pd.read_parquet(parquet, columns=_RESPONSE_COLUMNS)
            df.insert(0, "config", config)
            df.insert(0, "run", run)
            frames.append(df)
            rows.append(
                {
                    "run": run,
                    "model": summary.get("model", run),
                    "mode": summary.get("mode", "generate"),
                    "backend": summary.get("backend"),
                    "config": config,
                    "kind": summary.get("kind", "mc"),
                    "invalid_credit": summary.get("invalid_credit"),
                }
            )
    return Results(pd.DataFrame(rows), pd.concat(frames, ignore_index=True))


# ----------------------------------------------------------------------- per config


def config_table(results: Results) -> pd.DataFrame:
    """Accuracy, CIs, invalid rate, majority baseline and the test of the gain, per run × config."""
    out = []
    for (run, config), g in results.responses.groupby(["run", "config"], sort=False):
        scores = g["score"].to_numpy(np.float64)
        ci = accuracy_ci(scores)
        binary = bool(np.all((scores == 0.0) | (scores == 1.0)))
        base = majority_baseline(g["gold"].tolist())
        test = baseline_test(scores, base)
        out.append(
            {
                "run": run,
                "config": config,
                "n": len(g),
                **ci.fields(binary),
                "invalid_rate": float(g["invalid"].mean()),
                "majority_baseline": base,
                "gain": ci.accuracy - base,
                "p_value": test.p_value,
                "test": test.method,
            }
        )
    return pd.DataFrame(out)


def subject_table(results: Results) -> pd.DataFrame:
    """Accuracy per run × config × subject."""
    r = results.responses.assign(subject=results.responses["subject"].fillna("(none)"))
    g = r.groupby(["run", "config", "subject"], sort=True)["score"]
    return g.agg(n="size", accuracy="mean").reset_index()


def na_variants(results: Results) -> list[str]:
    """Configs compared with ``original``: multiple-choice (``mc``) configs other than it."""
    s = results.summaries
    return [c for c in dict.fromkeys(s.loc[s["kind"] == "mc", "config"]) if c != ORIGINAL]


def paired_subject_means(
    responses: pd.DataFrame, config: str, column: str
) -> list[tuple[str, int, float, float]]:
    """Per subject: (subject, n, mean `column` on original, on `config`) over the ids that
    both configs answered (one run's responses)."""
    base = responses[responses["config"] == ORIGINAL]
    other = responses[responses["config"] == config]
    paired = base.merge(other, on="id", suffixes=("_o", "_v"))
    if paired.empty:
        return []
    paired["subject"] = paired["subject_o"].fillna("(none)")
    return [
        (str(subject), len(g), float(g[f"{column}_o"].mean()), float(g[f"{column}_v"].mean()))
        for subject, g in paired.groupby("subject", sort=True)
    ]


def drop_table(results: Results) -> pd.DataFrame:
    """Per run, variant and subject: accuracy on original vs the variant (paired items)."""
    out = [
        {
            "run": run,
            "variant": variant,
            "subject": subject,
            "n": n,
            "acc_original": a_o,
            "acc_variant": a_v,
            "drop": a_o - a_v,
        }
        for run, rr in results.responses.groupby("run", sort=False)
        for variant in na_variants(results)
        for subject, n, a_o, a_v in paired_subject_means(rr, variant, "score")
    ]
    cols = ["run", "variant", "subject", "n", "acc_original", "acc_variant", "drop"]
    df = pd.DataFrame(out, columns=cols)
    df = df.sort_values(["run", "variant", "drop", "subject"], ascending=[True, True, False, True])
    df["rank"] = df.groupby(["run", "variant"]).cumcount() + 1
    return df.reset_index(drop=True)


# ---------------------------------------------------------------------------- panel


@dataclass
class Panel:
    """Runs × items score matrix of one config."""

    config: str
    runs: list[str]
    ids: list[str]
    subjects: list[str]
    scores: np.ndarray  # runs × items
    left_out: list[str] = field(default_factory=list)

    @property
    def categories(self) -> list[str]:
        return [category_of(s) for s in self.subjects]


def make_panel(results: Results, config: str, min_coverage: float = 1.0) -> Panel | None:
    """The panel of ``config`` (see module docstring); None with fewer than 2 runs."""
    r = results.responses[results.responses["config"] == config]
    by_run = {run: g for run, g in r.groupby("run", sort=False)}
    if len(by_run) < 2:
        return None
    largest = max(len(g) for g in by_run.values())
    keep = [run for run, g in by_run.items() if len(g) >= min_coverage * largest]
    left_out = [run for run in by_run if run not in keep]
    if len(keep) < 2:
        return None
    common = set(by_run[keep[0]]["id"])
    for run in keep[1:]:
        common &= set(by_run[run]["id"])
    first = by_run[keep[0]]
    ids = [i for i in first["id"] if i in common]  # the first run's item order
    if not ids:
        return None
    subj = first.set_index("id").loc[ids, "subject"]
    mat = np.vstack(
        [by_run[run].set_index("id").loc[ids, "score"].to_numpy(np.float64) for run in keep]
    )
    subjects = ["(none)" if not isinstance(s, str) else s for s in subj]
    return Panel(config, keep, ids, subjects, mat, left_out)


def discrimination_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """Per item: mean score over the panel and discrimination index D."""
    out = []
    for p in panels:
        d = discrimination_index(p.scores)
        means = p.scores.mean(axis=0)
        for i, item in enumerate(p.ids):
            out.append(
                {
                    "config": p.config,
                    "id": item,
                    "subject": p.subjects[i],
                    "category": p.categories[i],
                    "p": float(means[i]),
                    "D": float(d[i]),
                }
            )
    return pd.DataFrame(out, columns=["config", "id", "subject", "category", "p", "D"])


def panel_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """Per config: panel size, KR-20 over all items, mean D."""
    out = []
    for p in panels:
        d = discrimination_index(p.scores)
        out.append(
            {
                "config": p.config,
                "n_runs": len(p.runs),
                "n_items": len(p.ids),
                "kr20": kr20(p.scores),
                "mean_D": float(d.mean()),
                "runs": ", ".join(p.runs),
                "left_out": ", ".join(p.left_out),
            }
        )
    return pd.DataFrame(out)


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
                    "n_runs": len(p.runs),
                    "kr20": v,
                }
            )
    return pd.DataFrame(out, columns=["config", "category", "k", "n_runs", "kr20"])


def kr20_subject_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """KR-20 per config × subject (the observations of the per-category ANOVA)."""
    out = []
    for p in panels:
        values = kr20_by_group(p.scores, p.subjects)
        for subject, v in values.items():
            out.append(
                {
                    "config": p.config,
                    "category": category_of(subject),
                    "subject": subject,
                    "k": p.subjects.count(str(subject)),
                    "kr20": v,
                }
            )
    return pd.DataFrame(out, columns=["config", "category", "subject", "k", "kr20"])


def anova_table(kr20_subjects: pd.DataFrame, configs: Sequence[str]) -> pd.DataFrame:
    """One-way ANOVA of per-subject KR-20 across ``configs`` (the variants), per category."""
    out = []
    kr = kr20_subjects[kr20_subjects["config"].isin(list(configs))]
    for cat, g in kr.groupby("category", sort=True):
        groups = {
            cfg: gg["kr20"].dropna().to_numpy(np.float64)
            for cfg, gg in g.groupby("config", sort=False)
        }
        groups = {k: v for k, v in groups.items() if v.size}
        row: dict[str, Any] = {
            "category": cat,
            "variants": len(groups),
            "values": int(sum(v.size for v in groups.values())),
            "F": math.nan,
            "p_value": math.nan,
            "df_between": None,
            "df_within": None,
            "note": "",
        }
        if len(groups) < 2 or row["values"] <= len(groups):
            row["note"] = "too few subject KR-20 values"
        else:
            res = anova_oneway(*groups.values())
            row.update(
                F=res.f, p_value=res.p_value, df_between=res.df_between, df_within=res.df_within
            )
        out.append(row)
    cols = ["category", "variants", "values", "F", "p_value", "df_between", "df_within", "note"]
    return pd.DataFrame(out, columns=cols)


def correlation_table(
    configs: pd.DataFrame, variants: Sequence[str], panels: Sequence[Panel] = ()
) -> pd.DataFrame:
    """Pearson and Spearman of runs' accuracy on original vs each variant.

    Runs left out of either config's panel (partial coverage) are not used.
    """
    acc = configs.pivot(index="run", columns="config", values="accuracy")
    left = {p.config: set(p.left_out) for p in panels}
    out: list[dict[str, Any]] = []
    if ORIGINAL not in acc.columns:
        return pd.DataFrame(out)
    for variant in variants:
        skip = left.get(ORIGINAL, set()) | left.get(variant, set())
        both = acc.loc[~acc.index.isin(list(skip)), [ORIGINAL, variant]].dropna()
        row: dict[str, Any] = {"variant": variant, "n_runs": len(both)}
        if len(both) >= 2:
            pr = pearson(both[ORIGINAL], both[variant])
            sr = spearman(both[ORIGINAL], both[variant])
            row.update(
                pearson_r=pr.r, pearson_p=pr.p_value, spearman_rho=sr.r, spearman_p=sr.p_value
            )
        out.append(row)
    return pd.DataFrame(out)


def phrasing_table(configs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per run on each ``na_keyed*`` phrasing config, with the spread."""
    na = configs[configs["config"].str.startswith(NA_KEYED)]
    if na.empty:
        return pd.DataFrame()
    wide = na.pivot(index="run", columns="config", values="accuracy")
    wide["spread"] = wide.max(axis=1) - wide.min(axis=1)
    return wide.reset_index()


def confidence_table(results: Results) -> pd.DataFrame:
    """Per loglik run and subject: mean confidence on original and na_keyed (paired)."""
    s = results.summaries
    r = results.responses
    out = [
        {
            "run": run,
            "subject": subject,
            "n": n,
            "conf_original": c_o,
            "conf_na_keyed": c_k,
            "change": c_k - c_o,
        }
        for run in sorted(set(s.loc[s["mode"] == "loglik", "run"]))
        for subject, n, c_o, c_k in paired_subject_means(r[r["run"] == run], NA_KEYED, "confidence")
    ]
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- report


@dataclass
class Report:
    """Every table of the report (DataFrames), the panels and the written paths."""

    results: Results
    tables: dict[str, pd.DataFrame]
    panels: list[Panel]
    min_coverage: float
    plots: dict[str, Path] = field(default_factory=dict)
    markdown: str = ""


def build_report(results: Results, min_coverage: float = 1.0) -> Report:
    """Compute every table (no files written)."""
    configs = config_table(results)
    panels = [p for c in results.configs if (p := make_panel(results, c, min_coverage))]
    kr_subj = kr20_subject_table(panels)
    tables = {
        "configs": configs,
        "subjects": subject_table(results),
        "drops": drop_table(results),
        "panel": panel_table(panels),
        "discrimination": discrimination_table(panels),
        "kr20_category": kr20_category_table(panels),
        "kr20_subject": kr_subj,
        "anova": anova_table(kr_subj, [ORIGINAL, *na_variants(results)]),
        "correlations": correlation_table(configs, na_variants(results), panels),
        "phrasing": phrasing_table(configs),
        "confidence": confidence_table(results),
    }
    return Report(results, tables, panels, min_coverage)


def _fmt(v: object, digits: int = 3) -> str:
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


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A pipe table of ``df`` (floats to 3 decimals, nan as n/a)."""
    cols = list(columns or df.columns)
    if df.empty:
        return "_(none)_\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df[cols].iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def render_markdown(report: Report, top_subjects: int = 10) -> str:
    """The report as Markdown, readable on its own."""
    t = report.tables
    res = report.results
    parts = ["# nabench evaluation report\n"]
    runs = (
        res.summaries.groupby("run", sort=False)
        .agg(
            model=("model", "first"),
            mode=("mode", "first"),
            backend=("backend", "first"),
            configs=("config", lambda c: ", ".join(c)),
        )
        .reset_index()
    )
    parts += ["## Runs\n", md_table(runs)]

    parts.append("\n## Accuracy per config\n")
    parts.append(
        "Accuracy = mean item score; 95 % CI: Wilson when all scores are 0/1, else "
        "percentile bootstrap (both shown). Gain = accuracy − majority baseline; p: "
        "one-sided test that accuracy exceeds the baseline.\n"
    )
    cols = [
        "run",
        "n",
        "accuracy",
        "ci_low",
        "ci_high",
        "ci_method",
        "boot_low",
        "boot_high",
        "invalid_rate",
        "majority_baseline",
        "gain",
        "p_value",
        "test",
    ]
    for config, g in t["configs"].groupby("config", sort=False):
        parts += [f"\n### {config}\n", md_table(g, cols)]

    drops = t["drops"]
    if not drops.empty:
        parts.append("\n## Per-subject drop from original to each variant\n")
        parts.append(
            "Drop = accuracy on `original` − accuracy on the variant over the same items; "
            f"the {top_subjects} largest per run, then the mean over runs.\n"
        )
        for variant, g in drops.groupby("variant", sort=False):
            parts.append(f"\n### original → {variant}\n")
            mean = (
                g.groupby("subject")
                .agg(n=("n", "first"), runs=("run", "nunique"), mean_drop=("drop", "mean"))
                .sort_values("mean_drop", ascending=False)
                .reset_index()
            )
            mean["rank"] = np.arange(1, len(mean) + 1)
            parts += [
                "Mean over runs:\n\n",
                md_table(mean.head(top_subjects), ["rank", "subject", "n", "runs", "mean_drop"]),
            ]
            for run, gr in g.groupby("run", sort=False):
                parts += [
                    f"\n`{run}`:\n\n",
                    md_table(
                        gr.head(top_subjects),
                        ["rank", "subject", "n", "acc_original", "acc_variant", "drop"],
                    ),
                ]

    parts.append("\n## Panel reliability\n")
    parts.append(
        f"Panel of a config: runs covering ≥ {report.min_coverage:.0%} of the largest run's "
        "items, on the items all of them answered. KR-20 and discrimination D (27 % upper "
        "and lower groups of runs by total score) over that runs × items matrix.\n\n"
    )
    parts.append(md_table(t["panel"]))
    if not t["kr20_category"].empty:
        wide = t["kr20_category"].pivot(index="category", columns="config", values="kr20")
        parts += ["\n### KR-20 per MMLU category and variant\n\n", md_table(wide.reset_index())]
        k = t["kr20_category"].pivot(index="category", columns="config", values="k")
        parts += ["\nItems per cell (k):\n\n", md_table(k.reset_index())]
        parts += [
            "\n### ANOVA of KR-20 across variants, per category\n\n",
            "Observations: per-subject KR-20 values of the category's subjects in each "
            "variant (undefined values dropped).\n\n",
            md_table(t["anova"]),
        ]
    disc = t["discrimination"]
    if not disc.empty:
        summ = (
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
        parts += ["\n### Discrimination index D per config\n\n", md_table(summ)]
        parts.append("\nPer-item values: `tables/discrimination.csv`.\n")

    if not t["correlations"].empty:
        parts += [
            "\n## Correlation of run scores: original vs each variant\n\n",
            "One point per run; two-sided p-values.\n\n",
            md_table(t["correlations"]),
        ]
    if not t["phrasing"].empty:
        parts += [
            "\n## NA-phrasing sensitivity (accuracy per `na_keyed*` config)\n\n",
            md_table(t["phrasing"]),
        ]
    if not t["confidence"].empty:
        parts += [
            "\n## Confidence change original → na_keyed (loglik runs)\n\n",
            "Mean renormalised probability of the chosen option, paired items.\n\n",
            md_table(t["confidence"]),
        ]
    co = t["configs"][t["configs"]["config"] == "choices_only"]
    if not co.empty:
        parts += [
            "\n## Choices-only vs majority baseline\n\n",
            md_table(
                co,
                [
                    "run",
                    "n",
                    "accuracy",
                    "ci_low",
                    "ci_high",
                    "majority_baseline",
                    "gain",
                    "p_value",
                ],
            ),
        ]
    if report.plots:
        parts.append("\n## Plots\n\n")
        for name, path in report.plots.items():
            parts.append(f"![{name}]({path.as_posix()})\n\n")
    parts.append("\n## Conventions\n\n")
    parts.append(
        (__doc__ or "")
        .split("Statistical conventions (also printed at the end of the report):")[-1]
        .strip()
        + "\n"
    )
    return "".join(parts)


def write_report(
    paths: Sequence[str | Path], out: str | Path, min_coverage: float = 1.0, plots: bool = True
) -> Report:
    """Load results, compute the tables, write CSVs, plots and ``report.md`` under ``out``."""

    out = Path(out)
    report = build_report(load_results(paths), min_coverage)
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    for name, df in report.tables.items():
        df.to_csv(tables_dir / f"{name}.csv", index=False)
    if plots:
        report.plots = {
            k: v.relative_to(out) for k, v in write_plots(report, out / "plots").items()
        }
    report.markdown = render_markdown(report)
    (out / "report.md").write_text(report.markdown, encoding="utf-8")
    headline = {
        "configs": report.tables["configs"].to_dict("records"),
        "panel": report.tables["panel"].to_dict("records"),
        "kr20_category": report.tables["kr20_category"].to_dict("records"),
    }
    write_json_atomic(json_safe(headline), out / "report.json")
    return report
