"""The report over hand-written eval result folders: panel statistics over models only
(reference strategies are baselines), KR-20 against an independent computation, the
headline table's structure, run naming, and report.md hygiene."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nabench.evaluation.categories import mmlu_category
from nabench.evaluation.report import write_report

SUBJECTS = ["abstract_algebra", "anatomy", "philosophy", "world_religions", "virology"]


def _write_run(
    root: Path, run: str, config: str, scores: np.ndarray, *, backend: str = "local",
    model: str | None = None, subjects: list[str] | None = None,
) -> None:  # fmt: skip
    """One `nabench eval` result (the on-disk contract: parquet + summary.json)."""
    n = len(scores)
    ids = [f"mmlu/all/test/{k:05d}" for k in range(n)]
    subj = subjects or [SUBJECTS[k % len(SUBJECTS)] for k in range(n)]
    d = root / run
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "id": ids,
            "source_id": ids,
            "subject": subj,
            "score": scores.astype(float),
            "correct": scores == 1.0,
            "invalid": np.zeros(n, bool),
            "confidence": np.full(n, np.nan),
            "gold": ["ABCD"[k % 4] for k in range(n)],
        }
    ).to_parquet(d / f"{config}.parquet", index=False)
    summary = {"config": config, "model": model or run, "backend": backend,
               "mode": "generate", "kind": "mc", "invalid_credit": 0.25}  # fmt: skip
    (d / f"{config}.summary.json").write_text(json.dumps(summary))


def _kr20_by_formula(rows: list[list[float]]) -> float:
    """KR-20 = k/(k−1) · (1 − Σ p_j q_j / σ²) in plain Python (population variance)."""
    m, k = len(rows), len(rows[0])
    totals = [sum(r) for r in rows]
    mean = sum(totals) / m
    var = sum((t - mean) ** 2 for t in totals) / m
    pq = 0.0
    for j in range(k):
        p = sum(r[j] for r in rows) / m
        pq += p * (1.0 - p)
    return k / (k - 1) * (1.0 - pq / var)


@pytest.fixture(scope="module")
def panel28(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """28 models of graded ability on 300 items, original and na_keyed, + 2 baselines."""
    rng = np.random.default_rng(5)
    ability = np.linspace(-1.5, 1.5, 28)[:, None]
    difficulty = rng.normal(0, 1, 300)[None, :]
    p = 1 / (1 + np.exp(-(ability - difficulty)))
    orig = (rng.random(p.shape) < p).astype(float)
    keyed = orig * (rng.random(p.shape) < 0.8)
    root = tmp_path_factory.mktemp("panel28")
    for i in range(28):
        _write_run(root, f"model{i:02d}", "original", orig[i])
        _write_run(root, f"model{i:02d}", "na_keyed", keyed[i])
    for name, s in (("oracle", np.ones(300)), ("always-a", np.zeros(300))):
        _write_run(root, f"reference_{name}", "original", s, backend="reference")
        _write_run(root, f"reference_{name}", "na_keyed", s, backend="reference")
    return root, orig, keyed


def test_kr20_of_28_models_equals_the_formula(
    panel28: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    root, orig, keyed = panel28
    rep = write_report([root], tmp_path / "r", plots=False)
    panel = rep.tables["panel"].set_index("config")
    for config, mat in (("original", orig), ("na_keyed", keyed)):
        assert panel.loc[config, "n_models"] == 28  # the two baselines are not in it
        assert panel.loc[config, "kr20"] == pytest.approx(_kr20_by_formula(mat.tolist()))
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["panel_status"] == "ok" and len(data["models"]) == 28
    assert data["baselines"] == ["reference_always-a", "reference_oracle"]
    cat = pd.DataFrame(data["kr20_category"])
    stem = [j for j in range(300) if mmlu_category(SUBJECTS[j % 5]) == "stem"]
    row = cat[(cat["config"] == "original") & (cat["category"] == "stem")].iloc[0]
    assert row["kr20"] == pytest.approx(_kr20_by_formula(orig[:, stem].tolist()))
    corr = pd.DataFrame(data["correlations"]).set_index("variant")
    acc_o, acc_k = orig.mean(1), keyed.mean(1)
    assert corr.loc["na_keyed", "pearson_r"] == pytest.approx(np.corrcoef(acc_o, acc_k)[0, 1])


def test_headline_rows_and_json_structure(
    panel28: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    root, orig, keyed = panel28
    write_report([root], tmp_path / "r", plots=False)
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    head = {(h["run"], h["config"]): h for h in data["headline"]}
    assert len(head) == 30  # 28 models + 2 baselines, one variant each
    h = head[("model03", "na_keyed")]
    assert h["role"] == "model" and head[("reference_oracle", "na_keyed")]["role"] == "baseline"
    assert h["n"] == 300
    assert h["acc_original"] == pytest.approx(orig[3].mean())
    assert h["acc_variant"] == pytest.approx(keyed[3].mean())
    assert h["diff"] == pytest.approx(orig[3].mean() - keyed[3].mean())
    assert h["diff_ci"][0] <= h["diff"] <= h["diff_ci"][1]
    assert h["rel_drop"] == pytest.approx(h["diff"] / h["acc_original"])
    b = int(((orig[3] == 1) & (keyed[3] == 0)).sum())
    assert (h["orig_only_correct"], h["variant_only_correct"]) == (b, 0)
    assert 0.0 <= h["mcnemar_p"] <= 1.0 and h["mcnemar_method"] in ("exact", "chi2")
    subj = [r for r in data["headline_subjects"] if r["run"] == "model03"]
    assert {r["subject"] for r in subj} == set(SUBJECTS)
    assert sum(r["n"] for r in subj) == 300
    worst = {r["run"]: r for r in data["worst_case"]}
    assert worst["model03"]["acc_variant"] == pytest.approx(keyed[3].mean())  # one variant


@pytest.fixture
def four_refs_one_model(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    root = tmp_path / "res"
    gold_a = np.array([float(k % 4 == 0) for k in range(80)])
    for name, s in (("oracle", np.ones(80)), ("always-a", gold_a),
                    ("majority", gold_a), ("longest", (rng.random(80) < 0.3) * 1.0)):  # fmt: skip
        for config in ("original", "na_keyed"):
            _write_run(root, f"reference_{name}", config, s, backend="reference")
    _write_run(root, "smol", "original", (rng.random(80) < 0.4) * 1.0)
    _write_run(root, "smol", "na_keyed", (rng.random(80) < 0.3) * 1.0)
    return root


def test_four_strategies_and_one_model_show_no_panel_numbers(
    four_refs_one_model: Path, tmp_path: Path
) -> None:
    rep = write_report([four_refs_one_model], tmp_path / "r")
    md = (tmp_path / "r" / "report.md").read_text()
    panel = rep.tables["panel"]
    assert panel["n_models"].tolist() == [1, 1]
    assert panel["kr20"].isna().all() and panel["mean_D"].isna().all()
    assert "needs ≥ 5 models" in md
    assert rep.tables["discrimination"].empty and rep.tables["kr20_subject"].empty
    kr_section = md.split("## Panel reliability")[1].split("\n## ")[0]
    assert not re.search(r"\| 1\.000 \|", kr_section)  # the old 1.000-everywhere KR-20
    assert "Baselines (reference strategies" in md
    for name in ("oracle", "always-a", "majority", "longest"):
        assert f"`reference_{name}`" in md
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["panel_status"] == "needs ≥ 5 models"
    assert data["models"] == ["smol"] and len(data["baselines"]) == 4
    assert all(c["note"] == "needs ≥ 5 models" for c in data["correlations"])
    assert all(k["kr20"] is None for k in data["kr20_category"])
    # hygiene: no Sphinx roles, no p printed as 0.000, no phrasing spread for one phrasing
    assert not re.search(r":(func|mod|class|data):`", md)
    assert "spread" not in rep.tables["phrasing"].columns and "| spread" not in md
    assert "One phrasing evaluated: no spread." in md
    plots = sorted(p.name for p in (tmp_path / "r" / "plots").iterdir())
    assert "original_vs_variant.png" in plots and "subject_drop_na_keyed.png" in plots
    assert "kr20_by_category.png" not in plots  # no KR-20 below 5 models


def test_p_values_are_never_rounded_to_zero(panel28: tuple[Path, np.ndarray, np.ndarray],
                                            tmp_path: Path) -> None:  # fmt: skip
    root, _, _ = panel28
    write_report([root], tmp_path / "r", plots=False)
    md = (tmp_path / "r" / "report.md").read_text()
    header: list[str] = []
    for line in md.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            header = [] if not line.startswith("|") else header
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not header:
            header = cells
            continue
        for col, cell in zip(header, cells, strict=False):
            if col == "p_value" or col.endswith("_p"):
                assert cell not in ("0.000", "0.0", "0"), (col, line)


def test_two_runs_of_one_model_with_different_names(tmp_path: Path) -> None:
    """Folders of one name under two roots are named by root; one model (backend + id)
    is one panel member: of its two runs the one covering more items is used, and said."""
    rng = np.random.default_rng(3)
    root = tmp_path / "res"
    for run, backend in (("smol-local", "local"), ("smol-server", "openai")):
        for config in ("original", "na_keyed"):
            _write_run(root, run, config, (rng.random(40) < 0.5) * 1.0, model="SmolLM2",
                       backend=backend)  # fmt: skip
    other = tmp_path / "other"
    _write_run(other, "smol-local", "original", np.ones(40), model="SmolLM2")
    rep = write_report([root, other], tmp_path / "r", plots=False)
    assert set(rep.results.runs) == {"res/smol-local", "smol-server"}
    assert rep.notes == [
        "model local SmolLM2: used run res/smol-local (80 answers); left out its other run(s) "
        "other/smol-local (40 answers)"
    ]
    head = rep.tables["headline"]
    assert sorted(head["run"]) == ["res/smol-local", "smol-server"]
    assert set(head["model"]) == {"SmolLM2"}


def test_result_files_are_world_readable(four_refs_one_model: Path, tmp_path: Path) -> None:
    write_report([four_refs_one_model], tmp_path / "r", plots=False)
    for name in ("report.md", "report.json", "tables/headline.csv"):
        assert (tmp_path / "r" / name).stat().st_mode & 0o777 == 0o644


def test_na_paper_protocol_adds_its_tables_under_both_groupings(
    panel28: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    """Table 2 is the mean ± SD of per-subject KR-20 over a category's subjects: anatomy is
    stem under lm-eval's grouping and other under Hendrycks', so the two differ."""
    from click.testing import CliRunner

    from nabench.cli import main

    root, orig, keyed = panel28
    out = tmp_path / "r"
    res = CliRunner().invoke(
        main, ["report", str(root), "--out", str(out), "--no-plots", "--protocol", "na-paper"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((out / "report.json").read_text())
    assert data["protocol"]["name"] == "na-paper"
    tables = data["paper_tables"]
    assert set(tables) == {
        f"{t}_{g}" for t in ("paper_table1", "paper_table2", "anova")
        for g in ("hendrycks", "lm_eval")
    } | {"paper_table3", "full_vs_na_filtered", "full_vs_na_filtered_subjects"}  # fmt: skip
    subject_of = np.array([SUBJECTS[j % 5] for j in range(300)])

    def kr(mat: np.ndarray, subject: str) -> float:
        return _kr20_by_formula(mat[:, subject_of == subject].tolist())

    groupings = {
        "lm_eval": {"stem": ["abstract_algebra", "anatomy"], "other": ["virology"]},
        "hendrycks": {"stem": ["abstract_algebra"], "other": ["anatomy", "virology"]},
    }
    for grouping, cats in groupings.items():
        t2 = {(r["category"], r["variant"]): r for r in tables[f"paper_table2_{grouping}"]}
        t1 = {(r["category"], r["config"]): r for r in tables[f"paper_table1_{grouping}"]}
        for config, mat in (("original", orig), ("na_keyed", keyed)):
            for cat, subjects in cats.items():
                values = [kr(mat, s) for s in subjects]
                row = t2[(cat, config)]
                assert row["kr20_mean"] == pytest.approx(np.mean(values))
                assert row["n_subjects"] == len(subjects)
                if len(values) > 1:
                    assert row["kr20_sd"] == pytest.approx(np.std(values, ddof=1))
                else:
                    assert row["kr20_sd"] is None  # one subject: no SD
                assert t1[(cat, config)]["n_items"] == 60 * len(subjects)
        anova = {r["category"]: r for r in tables[f"anova_{grouping}"]}
        n_stem = len(cats["stem"])  # 2 variants x subjects values, 2 groups
        if n_stem > 1:
            assert anova["stem"]["df_within"] == 2 * n_stem - 2
    assert [r["run"] for r in tables["paper_table3"]] == sorted(f"model{i:02d}" for i in range(28))
    md = (out / "report.md").read_text()
    assert "## Tables of the `na-paper` protocol" in md and "### paper_table2_hendrycks" in md
    assert (out / "tables" / "paper_table2_hendrycks.csv").is_file()
    write_report([root], tmp_path / "plain", plots=False)
    plain = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert "protocol" not in plain and "paper_tables" not in plain


def test_report_protocol_below_five_models_and_wrong_preset(
    four_refs_one_model: Path, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from nabench.cli import main

    runner = CliRunner()
    out = tmp_path / "r"
    res = runner.invoke(main, ["report", str(four_refs_one_model), "--out", str(out),
                               "--no-plots", "--protocol", "na-paper"])  # fmt: skip
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    assert "### paper_table1_lm_eval\n\n_no rows: the panel needs ≥ 5 models_" in md
    res = runner.invoke(main, ["report", str(four_refs_one_model), "--out", str(tmp_path / "x"),
                               "--protocol", "line-of-duty"])  # fmt: skip
    assert res.exit_code != 0 and "'line-of-duty' applies to build, not report" in res.output
    assert not (tmp_path / "x").exists()


def _write_artifact_run(root: Path, run: str, config: str, parsed: list[str | None],
                        gold: list[str], subject: str = "anatomy") -> None:  # fmt: skip
    n = len(parsed)
    # ids in source order; written shuffled, so source order must come from the id's index
    ids = [f"mmlu/all/test/{k:05d}" for k in range(n)]
    order = np.random.default_rng(len(run) + len(config)).permutation(n)
    correct = np.array([p == g for p, g in zip(parsed, gold, strict=True)])
    invalid = np.array([p is None for p in parsed])
    d = root / run
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "id": ids,
            "source_id": ids,
            "subject": [subject] * n,
            "parsed": parsed,
            "score": np.where(invalid, 0.25, correct * 1.0),
            "correct": correct,
            "invalid": invalid,
            "confidence": np.full(n, np.nan),
            "gold": gold,
        }
    ).iloc[order].to_parquet(d / f"{config}.parquet", index=False)
    summary = {"config": config, "model": run, "backend": "local", "mode": "generate",
               "kind": "mc", "invalid_credit": 0.25}  # fmt: skip
    (d / f"{config}.summary.json").write_text(json.dumps(summary))


def _pooled_t_greater(x: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """The pooled-variance two-sample t and its one-sided (x > base) p, written out."""
    from scipy.stats import t as t_dist

    n1, n2 = len(x), len(base)
    pooled = ((n1 - 1) * x.var(ddof=1) + (n2 - 1) * base.var(ddof=1)) / (n1 + n2 - 2)
    t = (x.mean() - base.mean()) / np.sqrt(pooled * (1 / n1 + 1 / n2))
    return float(t), float(t_dist.sf(t, n1 + n2 - 2))


@pytest.mark.parametrize(
    ("subject", "scored"),
    [("anatomy", 300), ("ARC-Challenge", 400)],  # MMLU two-step: first 75 % of 400 items
)
def test_artifacts_paper_protocol_t_test_and_kappa(
    tmp_path: Path, subject: str, scored: int
) -> None:
    """The paper's significance test (one-sided pooled two-sample t against the per-item
    majority baseline, p < 0.00005), κ between choices-only and question-inference answers,
    and the authors' 75 % rule for MMLU with a two-step config (every config scored on the
    first 300 of 400 items, the baseline on all 400), each checked against formulas here."""
    from click.testing import CliRunner

    from nabench.cli import main

    rng = np.random.default_rng(3)
    n = 400
    gold = ["A" if k % 5 < 2 else "BCD"[k % 3] for k in range(n)]  # A is the majority
    root = tmp_path / "res"
    co = [g if rng.random() < 0.7 else "D" for g in gold]  # well above the baseline
    co[300:] = ["D"] * 100  # the last quarter all wrong: the 75 % rule changes the numbers
    qi = [c if rng.random() < 0.8 else None for c in co]  # mostly agrees, some invalid
    _write_artifact_run(root, "strong", "choices_only", co, gold, subject)
    _write_artifact_run(root, "strong", "qi_step2", qi, gold, subject)
    weak = [("A" if rng.random() < 0.5 else "B") for _ in gold]
    _write_artifact_run(root, "weak", "choices_only", weak, gold, subject)
    out = tmp_path / "r"
    res = CliRunner().invoke(
        main, ["report", str(root), "--out", str(out), "--no-plots", "--protocol",
               "artifacts-paper"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    tables = json.loads((out / "report.json").read_text())["paper_tables"]
    assert set(tables) == {"baseline_t_test", "qi_choices_only_kappa"}
    rows = {(r["run"], r["config"]): r for r in tables["baseline_t_test"]}
    base = np.array([g == "A" for g in gold], float)
    for key, parsed in ((("strong", "choices_only"), co), (("weak", "choices_only"), weak)):
        x = np.array([p == g for p, g in zip(parsed, gold, strict=True)], float)[:scored]
        t, p = _pooled_t_greater(x, base)
        row = rows[key]
        assert row["n"] == scored and row["n_baseline"] == n
        assert row["score"] == pytest.approx(x.mean())
        assert row["majority_letter"] == "A" and row["majority_baseline"] == base.mean()
        assert row["t"] == pytest.approx(t)
        assert row["p_value"] == pytest.approx(p, rel=1e-6)
        assert row["significant"] is (p < 0.00005)
    assert rows[("strong", "choices_only")]["significant"] is True
    assert rows[("weak", "choices_only")]["significant"] is False
    (kappa,) = tables["qi_choices_only_kappa"]  # "weak" has no qi_step2 run
    a = co[:scored]
    b = ["invalid" if q is None else q for q in qi[:scored]]
    labels = sorted(set(a) | set(b))
    p_o = np.mean([x == y for x, y in zip(a, b, strict=True)])
    p_e = sum((a.count(lab) / scored) * (b.count(lab) / scored) for lab in labels)
    assert kappa["run"] == "strong" and kappa["n"] == scored
    assert kappa["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert kappa["ci_low"] <= kappa["kappa"] <= kappa["ci_high"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", "invalid JSON at line 1, column 1"),
        ('{"a": 1}', 'not an eval summary (no "config" name)'),
        ("[1, 2]", 'not an eval summary (no "config" name)'),
    ],
)
def test_a_corrupt_summary_is_one_line_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    from click.testing import CliRunner

    from nabench.cli import main

    root = tmp_path / "res"
    (root / "run").mkdir(parents=True)
    (root / "run" / "original.summary.json").write_text(text)
    res = CliRunner().invoke(main, ["report", str(root), "--out", str(tmp_path / "r")])
    assert res.exit_code != 0 and "internal error" not in res.output
    assert f"original.summary.json: {message}" in res.output
    assert not (tmp_path / "r").exists()


def _write_na_keyed_runs(root: Path, n_models: int, subjects: list[str], per: int) -> dict:
    """``n_models`` runs of `na_keyed` over ``per`` items of each subject; returns
    run -> source id -> score."""
    rng = np.random.default_rng(11)
    ids = [f"mmlu/all/test/{k:05d}" for k in range(per * len(subjects))]
    subj = [s for s in subjects for _ in range(per)]
    scores = {}
    for m in range(n_models):
        run = f"model{m}"
        p = 0.2 + 0.6 * rng.random(len(subjects))  # a per-subject skill, so r is not 0
        correct = rng.random(len(ids)) < np.repeat(p, per)
        gold = ["ABCD"[k % 4] for k in range(len(ids))]
        d = root / run
        d.mkdir(parents=True)
        pd.DataFrame({
            "id": ids, "source_id": ids, "subject": subj,
            "parsed": [g if c else "E" for g, c in zip(gold, correct, strict=True)],
            "score": correct * 1.0, "correct": correct, "invalid": np.zeros(len(ids), bool),
            "confidence": np.full(len(ids), np.nan), "gold": gold,
        }).to_parquet(d / "na_keyed.parquet", index=False)  # fmt: skip
        (d / "na_keyed.summary.json").write_text(json.dumps(
            {"config": "na_keyed", "model": run, "backend": "local", "mode": "generate",
             "kind": "mc", "invalid_credit": 0.0}))  # fmt: skip
        scores[run] = dict(zip(ids, correct * 1.0, strict=True))
    return scores


def test_na_paper_full_vs_na_filtered_correlation(tmp_path: Path) -> None:
    """Per subject, na_keyed accuracy on all items vs on the NA-applicable ones; Pearson r
    over the subjects the filter leaves ≥ half of, per model and for the model mean —
    checked against accuracies and r computed here with plain loops and np.corrcoef."""
    from click.testing import CliRunner

    from nabench.cli import main

    subjects = ["anatomy", "astronomy", "virology", "marketing", "nutrition", "sociology",
                "philosophy", "prehistory"]  # fmt: skip
    per = 40
    root = tmp_path / "res"
    scores = _write_na_keyed_runs(root, 5, subjects, per)
    rng = np.random.default_rng(5)
    # filter rates 0.1 ... 0.8 by subject: the last three are at or above the 50 % cut
    rates = dict(zip(subjects, [0.1, 0.2, 0.3, 0.25, 0.45, 0.5, 0.6, 0.8], strict=True))
    labels, ids_of = [], {}
    for j, s in enumerate(subjects):
        ids = [f"mmlu/all/test/{k:05d}" for k in range(j * per, (j + 1) * per)]
        ids_of[s] = ids
        out = set(rng.choice(ids, int(rates[s] * per), replace=False))
        labels += [{"id": i, "na_applicable": "false" if i in out else "true"} for i in ids]
    pd.DataFrame(labels).to_csv(tmp_path / "labels.csv", index=False)
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["report", str(root), "--out", str(out), "--no-plots",
                                    "--protocol", "na-paper", "--labels",
                                    str(tmp_path / "labels.csv")])  # fmt: skip
    assert res.exit_code == 0, res.output
    tables = json.loads((out / "report.json").read_text())["paper_tables"]
    applicable = {r["id"] for r in labels if r["na_applicable"] == "true"}
    kept = [s for s in subjects if rates[s] < 0.5]
    rows = {r["scope"]: r for r in tables["full_vs_na_filtered"]}
    full_mean, filt_mean = np.zeros(len(kept)), np.zeros(len(kept))
    for run, by_id in scores.items():
        full = [sum(by_id[i] for i in ids_of[s]) / per for s in kept]
        filt = [np.mean([by_id[i] for i in ids_of[s] if i in applicable]) for s in kept]
        full_mean += np.array(full) / len(scores)
        filt_mean += np.array(filt) / len(scores)
        row = rows[run]
        assert row["n_subjects"] == 5 and row["n_subjects_left_out"] == 3
        assert row["pearson_r"] == pytest.approx(np.corrcoef(full, filt)[0, 1])
    mean = rows["mean over models"]
    assert mean["pearson_r"] == pytest.approx(np.corrcoef(full_mean, filt_mean)[0, 1])
    per_subject = {(r["run"], r["subject"]): r for r in tables["full_vs_na_filtered_subjects"]}
    assert per_subject[("model0", "prehistory")]["filter_rate"] == pytest.approx(0.8)
    assert per_subject[("model0", "prehistory")]["n_filtered"] == 8


def test_report_labels_flag_errors(tmp_path: Path) -> None:
    """--labels without a protocol that reads it, or labels naming no evaluated item: one
    line, nothing written; without --labels the table says what it needs."""
    from click.testing import CliRunner

    from nabench.cli import main

    root = tmp_path / "res"
    _write_na_keyed_runs(root, 1, ["anatomy", "virology"], 5)
    pd.DataFrame({"id": ["arc/x/1"], "na_applicable": [True]}).to_csv(tmp_path / "l.csv")
    runner = CliRunner()
    base = ["report", str(root), "--no-plots"]
    res = runner.invoke(main, [*base, "--out", str(tmp_path / "a"), "--labels",
                               str(tmp_path / "l.csv")])  # fmt: skip
    assert res.exit_code != 0 and "--labels is read only by a protocol" in res.output
    res = runner.invoke(main, [*base, "--out", str(tmp_path / "b"), "--protocol",
                               "artifacts-paper", "--labels", str(tmp_path / "l.csv")])  # fmt: skip
    assert res.exit_code != 0 and "--labels is read only by a protocol" in res.output
    res = runner.invoke(main, [*base, "--out", str(tmp_path / "c"), "--protocol", "na-paper",
                               "--labels", str(tmp_path / "l.csv")])  # fmt: skip
    assert res.exit_code != 0 and "name none of the na_keyed items" in res.output
    assert "Traceback" not in res.output
    assert not any((tmp_path / d).exists() for d in "abc")
    res = runner.invoke(main, [*base, "--out", str(tmp_path / "d"), "--protocol", "na-paper"])
    assert res.exit_code == 0, res.output
    tables = json.loads((tmp_path / "d" / "report.json").read_text())["paper_tables"]
    assert tables["full_vs_na_filtered"] == [
        {"scope": "all", "n_subjects": None, "n_subjects_left_out": None, "pearson_r": None,
         "pearson_p": None, "note": "needs report --labels"}]  # fmt: skip


def _filter_table(root: Path, labels: pd.DataFrame) -> dict:
    from nabench.evaluation.report import build_report
    from nabench.evaluation.results import load_results
    from nabench.schemas.protocol import get_protocol

    report = build_report(load_results([root]), protocol=get_protocol("na-paper"), labels=labels)
    return {r["scope"]: r for r in report.tables["full_vs_na_filtered"].to_dict("records")}


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_full_vs_filtered_edge_cases(tmp_path: Path) -> None:
    """Labels covering part of the items (the rest left out of both accuracies, said in the
    table), a run covering part of the items (the model mean on the common items), labels in
    pandas' nullable boolean dtype, and a labelled (already filtered) build refused."""
    from nabench.core.errors import NabenchError

    subjects = ["anatomy", "astronomy", "virology", "marketing", "nutrition"]
    per = 40
    root = tmp_path / "res"
    scores = _write_na_keyed_runs(root, 3, subjects, per)
    ids = [f"mmlu/all/test/{k:05d}" for k in range(per * len(subjects))]
    rng = np.random.default_rng(2)
    applicable = rng.random(len(ids)) < 0.8  # about 20 % filtered out per subject
    labelled = np.ones(len(ids), bool)
    labelled[:40] = False  # anatomy has no labels at all; 40 items without a label
    nullable = pd.array(applicable[labelled], dtype="boolean")  # pandas' nullable booleans
    labels = pd.DataFrame({"id": np.array(ids)[labelled], "na_applicable": nullable})
    rows = _filter_table(root, labels)

    def expected(run: str, items: list[str]) -> tuple[list[float], list[float]]:
        full, filt = [], []
        for j, _ in enumerate(subjects[1:], start=1):
            sub = [i for i in ids[j * per : (j + 1) * per] if i in items]
            full.append(np.mean([scores[run][i] for i in sub]))
            filt.append(np.mean([scores[run][i] for i in sub if applicable[ids.index(i)]]))
        return full, filt

    for run in scores:
        row = rows[run]
        assert row["n_subjects"] == 4  # anatomy has no labelled item: no filter rate
        assert row["note"] == "40 evaluated item(s) without a label left out"
        full, filt = expected(run, ids)
        assert row["pearson_r"] == pytest.approx(np.corrcoef(full, filt)[0, 1])
    # one run answers only part of the items: the mean is over the items all runs answered
    part = root / "model2" / "na_keyed.parquet"
    df = pd.read_parquet(part)
    df[df["subject"] != "virology"].iloc[:130].to_parquet(part, index=False)
    common = [i for i in pd.read_parquet(part)["source_id"] if i in set(ids[40:])]
    rows = _filter_table(root, labels)
    mean = rows["mean over models"]
    assert mean["note"] == f"on the {len(common)} labelled item(s) every run answered"
    per_run = [expected(run, common) for run in scores]
    full = [np.nanmean([p[0][k] for p in per_run]) for k in range(4)]
    filt = [np.nanmean([p[1][k] for p in per_run]) for k in range(4)]
    keep = [k for k in range(4) if not np.isnan(full[k])]  # virology: nobody-common
    assert mean["n_subjects"] == len(keep)
    assert mean["pearson_r"] == pytest.approx(
        np.corrcoef([full[k] for k in keep], [filt[k] for k in keep])[0, 1]
    )
    # results of a labelled build (only applicable items) with its labels: refused
    filtered = labels[labels["na_applicable"].fillna(False).to_numpy(bool)]
    only = root / "model0" / "na_keyed.parquet"
    df = pd.read_parquet(only)
    df[df["source_id"].isin(set(filtered["id"]))].to_parquet(only, index=False)
    for run in ("model1", "model2"):
        (root / run / "na_keyed.parquet").unlink()
        (root / run / "na_keyed.summary.json").unlink()
        (root / run).rmdir()
    with pytest.raises(NabenchError, match="labelled \\(already filtered\\) build"):
        _filter_table(root, labels)


def test_full_vs_filtered_mean_leaves_out_a_run_that_measured_nothing(tmp_path: Path) -> None:
    """A run whose every na_keyed answer is invalid measured nothing: the panel leaves it
    out, yet the mean over models of full_vs_na_filtered pooled it, and its short coverage
    cut the mean to the items it answered (r over 2 subjects' items instead of 6). The mean
    is over the runs that measured something, on their common items, and says whom it
    left out; the run keeps its own row."""
    subjects = ["anatomy", "astronomy", "virology", "marketing", "nutrition", "sociology"]
    per = 30
    root = tmp_path / "res"
    scores = _write_na_keyed_runs(root, 5, subjects, per)
    ids = [f"mmlu/all/test/{k:05d}" for k in range(per * len(subjects))]
    broken = root / "broken"
    shutil.copytree(root / "model0", broken)
    df = pd.read_parquet(broken / "na_keyed.parquet").iloc[: 2 * per]  # two subjects only
    df.assign(parsed=None, correct=False, invalid=True, score=0.0).to_parquet(
        broken / "na_keyed.parquet", index=False
    )
    summary = json.loads((broken / "na_keyed.summary.json").read_text())
    (broken / "na_keyed.summary.json").write_text(json.dumps({**summary, "model": "broken"}))
    applicable = np.random.default_rng(3).random(len(ids)) < 0.75
    rows = _filter_table(root, pd.DataFrame({"id": ids, "na_applicable": applicable}))
    full = np.zeros(len(subjects))
    filt = np.zeros(len(subjects))
    for by_id in scores.values():
        for j in range(len(subjects)):
            sub = range(j * per, (j + 1) * per)
            full[j] += np.mean([by_id[ids[k]] for k in sub]) / len(scores)
            filt[j] += np.mean([by_id[ids[k]] for k in sub if applicable[k]]) / len(scores)
    mean = rows["mean over models"]
    assert mean["n_subjects"] == len(subjects)
    assert mean["pearson_r"] == pytest.approx(np.corrcoef(full, filt)[0, 1])
    assert mean["note"] == "left out run(s) broken: every answer invalid"
    assert rows["broken"]["n_subjects"] == 2  # its own row is kept


def test_two_step_rule_applies_to_mmlu_items_only(tmp_path: Path) -> None:
    """An ARC run beside MMLU runs with a two-step config: the MMLU runs are still scored on
    their first 75 % of items, the ARC run on all of its items."""
    from nabench.evaluation.report import build_report
    from nabench.evaluation.results import load_results
    from nabench.schemas.protocol import get_protocol

    rng = np.random.default_rng(4)
    n = 200
    gold = ["ABCD"[k % 4] for k in range(n)]
    root = tmp_path / "res"
    co = [g if rng.random() < 0.6 else "A" for g in gold]
    _write_artifact_run(root, "mmlu_run", "choices_only", co, gold, "anatomy")
    _write_artifact_run(root, "mmlu_run", "qi_step2", co, gold, "anatomy")
    arc = root / "arc_run"
    _write_artifact_run(root, "arc_run", "choices_only", co, gold, "ARC-Challenge")
    df = pd.read_parquet(arc / "choices_only.parquet")  # ARC ids: another dataset
    df["id"] = df["source_id"] = df["id"].str.replace("mmlu/all/test/", "arc/challenge/test/")
    df.to_parquet(arc / "choices_only.parquet", index=False)
    report = build_report(load_results([root]), protocol=get_protocol("artifacts-paper"))
    rows = {(r["run"], r["config"]): r for r in report.tables["baseline_t_test"].to_dict("records")}
    assert rows[("mmlu_run", "choices_only")]["n"] == 150
    assert rows[("mmlu_run", "qi_step2")]["n"] == 150
    assert rows[("arc_run", "choices_only")]["n"] == 200


def test_panels_of_other_models_across_variants_are_said(tmp_path: Path) -> None:
    """A model with no na_keyed run sits in original's panel and not in na_keyed's: the two
    KR-20 / D values (and the ANOVA across variants) then compare different model panels,
    whose spread of abilities alone moves KR-20. The report says so, naming the model."""
    rng = np.random.default_rng(11)
    root = tmp_path / "res"
    for i in range(6):
        _write_run(root, f"model{i}", "original", (rng.random(40) < 0.2 + 0.1 * i) * 1.0)
        if i < 5:
            _write_run(root, f"model{i}", "na_keyed", (rng.random(40) < 0.1 + 0.1 * i) * 1.0)
    rep = write_report([root], tmp_path / "r", plots=False)
    panel = rep.tables["panel"].set_index("config")
    assert panel.loc["original", "n_models"] == 6 and panel.loc["na_keyed", "n_models"] == 5
    said = [n for n in rep.notes if "na_keyed" in n and "model5" in n]
    assert len(said) == 1, rep.notes
    assert "original" in said[0]
