"""Per-run tables of the report: accuracy per config, per subject, per NA phrasing, and
the confidence change of loglik runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nabench.evaluation.results import NA_KEYED, ORIGINAL, RUN_SETTINGS, Results, subject_labels
from nabench.evaluation.scoring import baseline_test
from nabench.evaluation.shortcuts import shortcut_margin
from nabench.evaluation.strategies import shortcut_model_ids
from nabench.stats.inference import accuracy_ci, score_fields

__all__ = [
    "CI_PAIRS",
    "HEADLINE_SHOWN",
    "SHORTCUT_COLUMNS",
    "confidence_table",
    "config_table",
    "headline_columns",
    "phrasing_table",
    "runs_table",
    "shortcut_table",
    "shortcut_wins",
    "subject_table",
    "with_ci",
]

# Each confidence interval of the headline tables: its column pair, shown as one [lo, hi].
CI_PAIRS = {"diff_ci": ("diff_low", "diff_high"), "rel_drop_ci": ("rel_drop_low", "rel_drop_high")}
# The columns report.md and report.html show of every headline table (headline, worst case,
# Redux split, per category); the CSVs and report.json carry all of them (the model id of a
# run is in the runs table).
HEADLINE_SHOWN = ("run", "config", "n", "acc_original", "acc_variant", "invalid_share_original",
                  "invalid_share_variant", "diff", "diff_ci", "rel_drop", "rel_drop_ci",
                  "mcnemar_p", "mcnemar_p_bh", "significant_fdr", "mde_80", "clustering", "cl_p",
                  "orig_only_correct", "variant_only_correct")  # fmt: skip


def headline_columns(*key: str) -> list[str]:
    """`HEADLINE_SHOWN` with the table's own key after the run (default `config`; the worst
    case: `variants`; the Redux split: `config`, `redux`)."""
    return ["run", *(key or ("config",)), *HEADLINE_SHOWN[2:]]


def shortcut_wins(shortcuts: pd.DataFrame) -> pd.DataFrame:
    """The rows of the shortcut table report.md and report.html show: the configs a
    key-blind strategy wins."""
    return shortcuts[shortcuts["beats_majority"]]


# Of a run's settings, what Markdown shows (the HTML page shows them all).
RUN_COLUMNS_MD = ("run", "role", "model", "mode", "backend", "invalid_rate", "invalid_credit",
                  "configs")  # fmt: skip
SHORTCUT_COLUMNS = ["config", "run", "strategy", "n", "accuracy", "ci_low", "ci_high",
                    "majority_baseline", "margin", "beats_majority"]  # fmt: skip


def with_ci(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` plus each CI of `CI_PAIRS` as one ``[lo, hi]`` column (every output's CI cell)."""
    pairs = {
        name: [[a, b] for a, b in zip(df[lo], df[hi], strict=True)]
        for name, (lo, hi) in CI_PAIRS.items()
        if lo in df
    }
    return df.assign(**pairs)


def runs_table(results: Results) -> pd.DataFrame:
    """One row per run (nabench and harness runs alike): role, model, backend, mode, the
    settings its first config's summary records, its share of invalid answers (over all its
    configs) beside the credit `score` gives one, and its configs."""
    s = results.summaries
    first = {k: (k, "first") for k in ("model", "mode", "backend", "invalid_credit", *RUN_SETTINGS)}
    runs = (
        s.groupby("run", sort=False)
        .agg(**first, configs=("config", lambda c: ", ".join(map(str, c))))
        .reset_index()
    )
    runs.insert(1, "role", runs["run"].map(results.roles()))
    invalid = results.responses.groupby("run", sort=False, observed=True)["invalid"].mean()
    runs.insert(5, "invalid_rate", runs["run"].map(invalid))
    return runs


def config_table(results: Results) -> pd.DataFrame:
    """Accuracy (share correct) with CIs, invalid rate, the score with the invalid credit,
    majority baseline and the test of the accuracy's gain over it, per run × config."""
    roles = results.roles()
    credit = results.summaries.set_index(["run", "config"])["invalid_credit"]
    out = []
    for (run, config), g in results.responses.groupby(["run", "config"], sort=False):
        correct = g["correct"].to_numpy(np.float64)
        ci = accuracy_ci(correct)
        base = float(g["gold"].value_counts(normalize=True).max())  # = majority_baseline
        test = baseline_test(correct, base)
        out.append(
            {
                "run": run,
                "role": roles[str(run)],
                "config": config,
                "n": len(g),
                **ci.fields(True),
                "invalid_rate": float(g["invalid"].mean()),
                "invalid_credit": credit.get((run, config)),
                **score_fields(g["score"].to_numpy(np.float64)),
                "majority_baseline": base,
                "gain": ci.accuracy - base,
                "p_value": test.p_value,
                "test": test.method,
            }
        )
    return pd.DataFrame(out)


def shortcut_table(configs: pd.DataFrame, results: Results) -> pd.DataFrame:
    """Every reference run of a shortcut strategy (one that never reads the key: always-a,
    longest, always-na, ...) per config, with ``beats_majority`` where its accuracy beats
    the config's majority baseline by more than its CI (``margin`` = ci_low − baseline
    > 0): a config a model can win without knowing the answers."""
    ids = shortcut_model_ids()
    model = dict(zip(results.summaries["run"], results.summaries["model"], strict=False))
    strategy = configs["run"].map(lambda r: ids.get(str(model.get(r))))
    rows = configs[(configs["role"] == "baseline") & strategy.notna()]
    if rows.empty:
        return pd.DataFrame(columns=SHORTCUT_COLUMNS)
    margin = shortcut_margin(rows["ci_low"], rows["majority_baseline"])
    out = rows.assign(strategy=strategy[rows.index], margin=margin)
    out["beats_majority"] = out["margin"] > 0
    return out[SHORTCUT_COLUMNS].reset_index(drop=True)


def subject_table(results: Results) -> pd.DataFrame:
    """Accuracy (share correct) and invalid rate per run × config × subject."""
    r = results.responses.assign(subject=subject_labels(results.responses["subject"]))
    g = r.groupby(["run", "config", "subject"], sort=True)
    return g.agg(
        n=("correct", "size"), accuracy=("correct", "mean"), invalid_rate=("invalid", "mean")
    ).reset_index()


def phrasing_table(configs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per model run on each ``na_keyed*`` phrasing config, with the max − min
    spread when at least two phrasings were evaluated. A cell where every answer is invalid
    is empty, not 0: the run measured nothing there, and its 0 would read as the phrasing's
    effect (the spread is over the measured cells, empty with fewer than two)."""
    na = configs[configs["config"].str.startswith(NA_KEYED)]
    if na.empty:
        return pd.DataFrame()
    measured = na["accuracy"].where(na["invalid_rate"] < 1.0)
    wide = na.assign(accuracy=measured).pivot(index="run", columns="config", values="accuracy")
    if wide.shape[1] >= 2:
        spread = wide.max(axis=1) - wide.min(axis=1)
        wide["spread"] = spread.where(wide.notna().sum(axis=1) >= 2)
    return wide.reset_index()


def confidence_table(results: Results) -> pd.DataFrame:
    """Per loglik run and subject: mean confidence on original and na_keyed (paired ids)."""
    s = results.summaries
    runs = set(s.loc[s["mode"] == "loglik", "run"])
    r = results.responses
    r = r[r["run"].isin(runs)]
    base = r.loc[r["config"] == ORIGINAL, ["run", "id", "subject", "confidence"]]
    keyed = r.loc[r["config"] == NA_KEYED, ["run", "id", "confidence"]]
    paired = base.merge(keyed, on=["run", "id"], suffixes=("_o", "_k"))
    cols = ["run", "subject", "n", "conf_original", "conf_na_keyed", "change"]
    if paired.empty:
        return pd.DataFrame(columns=cols)
    paired["subject"] = subject_labels(paired["subject"])
    out = paired.groupby(["run", "subject"], sort=True).agg(
        n=("id", "size"),
        conf_original=("confidence_o", "mean"),
        conf_na_keyed=("confidence_k", "mean"),
    )
    out["change"] = out["conf_na_keyed"] - out["conf_original"]
    return out.reset_index()[cols]
