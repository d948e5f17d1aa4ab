"""The report's multiple-comparison columns (family, Holm, BH, significant_fdr), its
clustered intervals (clustering named) and minimum detectable drops, on synthetic panels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import nabench.evaluation as ev
from nabench.evaluation.headline import headline_table
from nabench.evaluation.results import load_results

SUBJECTS = sorted(yaml.safe_load((Path(ev.__file__).parent / "mmlu_categories.yaml").read_text()))
PER = 40  # items per subject
DROPPED = SUBJECTS[:6]  # subjects where na_distractor has a real drop


def _write(root: Path, run: str, config: str, scores: np.ndarray, backend: str = "local") -> None:
    """One `nabench eval` result folder entry (parquet + summary.json)."""
    n = scores.size
    ids = [f"mmlu/all/test/{k:05d}" for k in range(n)]
    d = root / run
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {"id": ids, "source_id": ids, "subject": np.repeat(SUBJECTS, PER),
         "score": scores.astype(float), "correct": scores == 1.0, "invalid": np.zeros(n, bool),
         "confidence": np.full(n, np.nan), "gold": ["ABCD"[k % 4] for k in range(n)]}
    ).to_parquet(d / f"{config}.parquet", index=False)  # fmt: skip
    summary = {"config": config, "model": run, "backend": backend, "mode": "generate",
               "kind": "mc", "invalid_credit": 0.25}  # fmt: skip
    (d / f"{config}.summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 models: na_keyed has no effect in any subject (the variant redraws each item at
    the original's probability); na_distractor drops 6 subjects to accuracy 0.05."""
    rng = np.random.default_rng(11)
    root = tmp_path_factory.mktemp("sig")
    n = len(SUBJECTS) * PER
    for m in range(3):
        p = 1 / (
            1 + np.exp(-(rng.normal(0.5, 1.0, len(SUBJECTS)).repeat(PER) + rng.normal(0, 1, n)))
        )
        orig = (rng.random(n) < p) * 1.0
        null = (rng.random(n) < p) * 1.0
        dropped = np.isin(np.repeat(SUBJECTS, PER), DROPPED)
        distract = np.where(dropped, (rng.random(n) < 0.05) * 1.0, orig)
        for config, s in (("original", orig), ("na_keyed", null), ("na_distractor", distract)):
            _write(root, f"model{m}", config, s)
    for config in ("original", "na_keyed", "na_distractor"):
        _write(root, "reference_always-a", config, np.zeros(n), backend="reference")
    return root


@pytest.fixture(scope="module")
def tables(root: Path) -> dict[str, pd.DataFrame]:
    res = load_results([root])
    return headline_table(res, res.mc_variants())


def test_no_subject_effect_leaves_at_most_five_percent_fdr_significant(
    tables: dict[str, pd.DataFrame],
) -> None:
    subj = tables["headline_subjects"]
    models = subj[subj["role"] == "model"]
    null = models[models["config"] == "na_keyed"]
    assert len(null) == 3 * len(SUBJECTS)
    assert null["significant_fdr"].mean() <= 0.05
    assert (null["mcnemar_p"] < 0.05).sum() > null["significant_fdr"].sum()  # raw p over-reads
    real = models[(models["config"] == "na_distractor") & models["subject"].isin(DROPPED)]
    assert real["significant_fdr"].all()  # the flag still finds the real drops
    # adjusted p-values are never below the raw ones; Holm is never below BH
    assert (models["mcnemar_p_bh"] >= models["mcnemar_p"] - 1e-15).all()
    assert (models["mcnemar_p_holm"] >= models["mcnemar_p_bh"] - 1e-15).all()
    assert set(subj["family"]) == {
        f"{r}: subjects × variants" for r in ("model0", "model1", "model2", "reference_always-a")
    }


def test_family_is_per_run_and_adjusts_within_it(tables: dict[str, pd.DataFrame]) -> None:
    from statsmodels.stats.multitest import multipletests

    subj = tables["headline_subjects"]
    one = subj[subj["run"] == "model1"]
    assert len(one) == 2 * len(SUBJECTS)  # subjects × two variants
    np.testing.assert_allclose(
        one["mcnemar_p_bh"], multipletests(one["mcnemar_p"], method="fdr_bh")[1], rtol=1e-12
    )
    np.testing.assert_allclose(
        one["mcnemar_p_holm"], multipletests(one["mcnemar_p"], method="holm")[1], rtol=1e-12
    )
    head = tables["headline"]
    assert set(head.loc[head["role"] == "model", "family"]) == {"models × variants"}
    assert set(head.loc[head["role"] == "baseline", "family"]) == {"baselines × variants"}
    models = head[head["role"] == "model"]
    ref = multipletests(models["mcnemar_p"], method="holm")[1]
    np.testing.assert_allclose(models["mcnemar_p_holm"], ref, rtol=1e-12)


def test_clustering_is_named_and_counts_its_units(tables: dict[str, pd.DataFrame]) -> None:
    head = tables["headline"]
    assert set(head["clustering"]) == {"subject"}
    assert set(head["n_clustering_units"]) == {len(SUBJECTS)}
    cats = tables["headline_categories"]
    assert set(cats["clustering"]) == {"subject"}
    sizes = cats.groupby("category")["n_clustering_units"].first().to_dict()
    assert sizes == {"stem": 19, "humanities": 13, "social_sciences": 12, "other": 13}
    subj = tables["headline_subjects"]
    assert set(subj["clustering"]) == {"item"} and set(subj["n_clustering_units"]) == {PER}
    # the subject-clustered interval is wider than the item-level one where subjects differ
    row = head[(head["run"] == "model0") & (head["config"] == "na_distractor")].iloc[0]
    assert row["cl_diff_high"] - row["cl_diff_low"] > row["diff_high"] - row["diff_low"]
    assert row["cl_diff_low"] <= row["diff"] <= row["cl_diff_high"]


def test_mde_column_is_the_planning_mde_of_the_row(tables: dict[str, pd.DataFrame]) -> None:
    from nabench.stats.power import planned_mde

    subj = tables["headline_subjects"]
    r = subj[(subj["run"] == "model2") & (subj["config"] == "na_keyed")].iloc[0]
    a, b = r["both_correct"], r["orig_only_correct"]
    c, d = r["variant_only_correct"], r["both_wrong"]
    phi = (a * d - b * c) / np.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    # the exact MDE is solved to 1e-6 (rows solved together may take one more step)
    assert r["mde_80"] == pytest.approx(float(planned_mde(PER, (a + b) / PER, phi)), abs=1e-6)
    head = tables["headline"]
    overall = head[(head["run"] == "model2") & (head["config"] == "na_keyed")].iloc[0]
    assert overall["mde_80"] < r["mde_80"]  # 57 subjects' items detect smaller drops
    # always-a is never right: no drop is possible, so none is detectable
    assert head.loc[head["run"] == "reference_always-a", "mde_80"].isna().all()


def test_report_md_shows_the_adjusted_p_the_flag_and_the_mde(root: Path, tmp_path: Path) -> None:
    from nabench.evaluation.report import write_report

    write_report([root], tmp_path / "r", plots=False, html=False)
    md = (tmp_path / "r" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| run | config | n |"))
    for col in ("mcnemar_p_bh", "significant_fdr", "mde_80", "clustering", "cl_p"):
        assert f"| {col} |" in header
    assert "| models_fdr_significant |" in md
    csv = pd.read_csv(tmp_path / "r" / "tables" / "headline_subjects.csv")
    assert {"family", "mcnemar_p_holm", "mcnemar_p_bh", "significant_fdr", "mde_80"} <= set(csv)


def test_clustered_interval_is_of_the_accuracy_drop_it_sits_beside(tmp_path: Path) -> None:
    """``cl_*`` test the same strict-accuracy drop as ``diff`` (0/1 ``correct``), not the
    score with its invalid credit: with invalid variant outputs (score 0.25, not correct)
    the Wald interval is centred on ``diff`` and its p agrees with a drop of that size."""
    rng = np.random.default_rng(5)
    n = len(SUBJECTS) * PER
    orig = rng.random(n) < 0.6
    invalid = rng.random(n) < 0.3  # the variant fails to answer 30 % of items
    var = np.where(invalid, False, rng.random(n) < 0.6)
    for config, correct, inv in (("original", orig, np.zeros(n, bool)), ("na_keyed", var, invalid)):
        _write(tmp_path, "m", config, correct * 1.0)
        path = tmp_path / "m" / f"{config}.parquet"
        frame = pd.read_parquet(path)
        frame["invalid"] = inv
        frame["score"] = np.where(inv, 0.25, correct * 1.0)  # the invalid credit
        frame.to_parquet(path, index=False)
    res = load_results([tmp_path])
    tables = headline_table(res, res.mc_variants())
    for name in ("headline", "headline_categories", "headline_subjects"):
        t = tables[name]
        mid = (t["cl_diff_low"] + t["cl_diff_high"]) / 2
        inside = (t["cl_diff_low"] > -1) & (t["cl_diff_high"] < 1)  # not clipped
        np.testing.assert_allclose(mid[inside], t["diff"][inside], atol=1e-12, err_msg=name)
    head = tables["headline"].iloc[0]
    assert head["diff"] == pytest.approx(orig.mean() - var.mean())
    assert head["cl_p"] < 1e-6  # a drop of ~22 points (the score drops ~14)


def test_a_runs_bootstrap_interval_does_not_depend_on_the_other_runs(
    root: Path, tmp_path: Path
) -> None:
    """The headline's bootstrap CIs drew every row from one random stream in row order, so
    a run's published interval changed with the runs reported beside it (0.045 to 0.1575
    beside six models, 0.0475 to 0.155 alone, on one 400-item build). Each row's interval
    now depends on its own rows only: model2 alone gets the same CIs as beside the others,
    and the intervals are those of a percentile bootstrap of its paired items (checked
    against one written here with numpy, to Monte Carlo accuracy)."""
    cols = ["config", "diff", "diff_low", "diff_high", "rel_drop_low", "rel_drop_high"]
    every = headline_table(load_results([root]), ["na_keyed", "na_distractor"])["headline"]
    alone_root = tmp_path / "alone"
    shutil.copytree(root / "model2", alone_root / "model2")
    alone = headline_table(load_results([alone_root]), ["na_keyed", "na_distractor"])
    beside = every[every["run"] == "model2"][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(beside, alone["headline"][cols].reset_index(drop=True))
    o = pd.read_parquet(root / "model2" / "original.parquet")["correct"].to_numpy(float)
    v = pd.read_parquet(root / "model2" / "na_distractor.parquet")["correct"].to_numpy(float)
    idx = np.random.default_rng(7).integers(0, o.size, (4000, o.size))
    low, high = np.quantile(o[idx].mean(1) - v[idx].mean(1), [0.025, 0.975])
    row = beside.set_index("config").loc["na_distractor"]
    assert row["diff_low"] == pytest.approx(low, abs=0.01)
    assert row["diff_high"] == pytest.approx(high, abs=0.01)
