"""What the report's numbers mean: accuracy is strict (an invalid answer is wrong, the
invalid credit is the separate `score`), a panel member is a model (not a run), the
na-paper preset compares the paper's three conditions under the paper's grouping, p-values
that underflow print as a bound, and rows a table would drop are named in a note."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from nabench.cli import main
from nabench.core.cells import fmt_p
from nabench.core.errors import NabenchError
from nabench.evaluation.categories import mmlu_subject_categories
from nabench.evaluation.report import write_report
from nabench.schemas.protocol import get_protocol

SUBJECTS = ["abstract_algebra", "anatomy", "philosophy", "world_religions", "virology"]


def _write(
    root: Path, run: str, config: str, correct: np.ndarray, *, invalid: np.ndarray | None = None,
    model: str | None = None, backend: str = "local", subjects: list[str] | None = None,
    ids: list[str] | None = None,
) -> None:  # fmt: skip
    """One `nabench eval` result in its on-disk format (parquet + summary.json); an invalid
    answer scores the run's invalid credit 0.25 and is never correct."""
    n = len(correct)
    inv = np.zeros(n, bool) if invalid is None else invalid
    ids = ids or [f"mmlu/all/test/{k:05d}" for k in range(n)]
    subj = subjects or [SUBJECTS[k % len(SUBJECTS)] for k in range(n)]
    d = root / run
    d.mkdir(parents=True, exist_ok=True)
    ok = correct.astype(bool) & ~inv
    pd.DataFrame(
        {
            "id": ids, "source_id": ids, "subject": subj,
            "score": np.where(inv, 0.25, ok * 1.0), "correct": ok, "invalid": inv,
            "confidence": np.full(n, np.nan), "gold": ["ABCD"[k % 4] for k in range(n)],
        }
    ).to_parquet(d / f"{config}.parquet", index=False)  # fmt: skip
    summary = {"config": config, "model": model or run, "backend": backend,
               "mode": "generate", "kind": "mc", "invalid_credit": 0.25}  # fmt: skip
    (d / f"{config}.summary.json").write_text(json.dumps(summary))


def _abilities(n_models: int, n_items: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, n_models)[:, None]
    p = 1 / (1 + np.exp(-(ability - rng.normal(0, 1, n_items)[None, :])))
    return rng.random(p.shape) < p


def test_all_unparseable_na_keyed_answers_have_accuracy_zero(tmp_path: Path) -> None:
    """Old code credited each invalid answer 0.25 inside `acc`: na_keyed read 0.25 (above
    original's 0.2) with 0 answers right. Accuracy now counts correct answers only."""
    n = 40
    orig = np.arange(n) % 5 == 0  # 8 of 40 right: accuracy 0.2
    root = tmp_path / "res"
    _write(root, "m", "original", orig)
    _write(root, "m", "na_keyed", np.zeros(n, bool), invalid=np.ones(n, bool))
    write_report([root], tmp_path / "r", plots=False)
    head = pd.read_csv(tmp_path / "r" / "tables" / "headline.csv").iloc[0]
    assert head["acc_variant"] == 0.0 and head["acc_original"] == pytest.approx(0.2)
    assert head["diff"] == pytest.approx(0.2)  # agrees with McNemar: 8 discordant pairs
    assert (head["orig_only_correct"], head["variant_only_correct"]) == (8, 0)
    assert head["invalid_share_variant"] == 1.0 and head["invalid_share_original"] == 0.0
    configs = pd.read_csv(tmp_path / "r" / "tables" / "configs.csv").set_index("config")
    assert configs.loc["na_keyed", "accuracy"] == 0.0
    assert configs.loc["na_keyed", "invalid_rate"] == 1.0
    assert configs.loc["na_keyed", "score"] == pytest.approx(0.25)  # the labelled credit
    subjects = pd.read_csv(tmp_path / "r" / "tables" / "subjects.csv")
    assert (subjects.loc[subjects["config"] == "na_keyed", "accuracy"] == 0.0).all()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "invalid_share_variant" in md.split("## Accuracy per config")[0]  # the headline


def _eight_models(root: Path, n: int = 60) -> np.ndarray:
    orig = _abilities(8, n, 1)
    keyed = orig & (np.random.default_rng(2).random(orig.shape) < 0.7)
    for i in range(8):
        _write(root, f"m{i}", "original", orig[i])
        _write(root, f"m{i}", "na_keyed", keyed[i])
    return orig


def test_eight_models_and_a_shorter_rerun_of_one_are_a_panel_of_eight(tmp_path: Path) -> None:
    root = tmp_path / "res"
    _eight_models(root)
    rerun = _abilities(1, 20, 9)[0]  # m3 again with --limit 20: a folder of another name
    _write(root, "m3__local", "original", rerun, model="m3")
    _write(root, "m3__local", "na_keyed", rerun, model="m3")
    # a baseline over 100 items beside models run on 60
    _write(root, "reference_oracle", "original", np.ones(100, bool), backend="reference")
    _write(root, "reference_oracle", "na_keyed", np.ones(100, bool), backend="reference")
    res = CliRunner().invoke(
        main, ["report", str(root), "--out", str(tmp_path / "r"), "--no-plots"]
    )
    assert res.exit_code == 0, res.output
    note = (
        "model local m3: used run m3 (120 answers); left out its other run(s) m3__local "
        "(40 answers)"
    )
    assert f"note: {note}" in res.output
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert note in data["notes"]
    panel = {p["config"]: p for p in data["panel"]}
    assert panel["original"]["n_models"] == panel["na_keyed"]["n_models"] == 8
    assert "m3__local" not in {h["run"] for h in data["headline"]}
    assert len(data["models"]) == 8
    configs = pd.DataFrame(data["configs"])
    oracle = configs[configs["run"] == "reference_oracle"]
    assert set(oracle["n"]) == {60}  # restricted to the items the models answered
    md = (tmp_path / "r" / "report.md").read_text()
    runs = md.split("## Runs")[1].split("Models (the panel)")[0]
    rows = [line for line in runs.splitlines() if line.startswith("| m") or "reference" in line]
    assert rows[-1].startswith("| reference_oracle")  # models first, baselines after
    assert note in md


def test_two_runs_of_one_model_covering_equally_many_items_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "res"
    for run in ("smol-a", "smol-b"):
        _write(root, run, "original", np.ones(30, bool), model="SmolLM2")
    with pytest.raises(NabenchError) as err:
        write_report([root], tmp_path / "r", plots=False)
    msg = str(err.value)
    assert "\n" not in msg and "smol-a, smol-b" in msg and "SmolLM2" in msg
    assert "30 answers each" in msg
    # another backend is another model: both stay
    _write(tmp_path / "two", "smol-a", "original", np.ones(30, bool), model="SmolLM2")
    _write(tmp_path / "two", "smol-vllm", "original", np.ones(30, bool), model="SmolLM2",
           backend="vllm")  # fmt: skip
    rep = write_report([tmp_path / "two"], tmp_path / "r2", plots=False)
    assert rep.results.models == ["smol-a", "smol-vllm"] and rep.notes == []


def test_of_two_runs_of_one_model_the_one_that_measured_something_is_kept(
    tmp_path: Path,
) -> None:
    """Of two runs of one model the report kept the one with more answers, even when every
    one of them was invalid (a broken prompt format over the full build), and dropped the
    model's valid run on fewer items: the model left the panel and its headline rows
    were all-invalid ones. Answers in a config whose every answer is invalid measured
    nothing and do not count for the choice; the note says why."""
    root = tmp_path / "res"
    scores = _abilities(6, 60, 1)
    for i in range(5):
        for config in ("original", "na_keyed"):
            _write(root, f"m{i}", config, scores[i])
    for config in ("original", "na_keyed"):
        _write(root, "smol-40", config, scores[5][:40], model="SmolLM2")
        _write(root, "smol-broken", config, np.zeros(60, bool), invalid=np.ones(60, bool),
               model="SmolLM2")  # fmt: skip
    rep = write_report([root], tmp_path / "r", plots=False)
    assert "smol-40" in rep.results.models and "smol-broken" not in rep.results.runs
    assert rep.notes[0] == (
        "model local SmolLM2: used run smol-40 (80 answers); left out its other run(s) "
        "smol-broken (120 answers, none valid)"
    )
    head = rep.tables["headline"].set_index("run")
    assert head.loc["smol-40", "n"] == 40
    assert head.loc["smol-40", "acc_original"] == pytest.approx(scores[5][:40].mean())


SEVEN = [
    "original", "na_keyed", "na_keyed__answer_not_found", "na_keyed__no_valid_options",
    "na_keyed__none_of_the_options_given_is_correct", "na_distractor", "all_of_the_above",
]  # fmt: skip


def _kr20(mat: np.ndarray) -> float:
    """KR-20 = k/(k−1) · (1 − Σ p q / σ²), population variance, written out."""
    k = mat.shape[1]
    p = mat.mean(axis=0)
    return k / (k - 1) * (1 - float((p * (1 - p)).sum()) / float(mat.sum(axis=1).var()))


def test_na_paper_anova_is_the_papers_three_conditions_under_hendrycks(tmp_path: Path) -> None:
    """Nine models on all seven mmlu-na configs: the ANOVA of tables/anova.csv compares
    original, na_keyed and na_distractor per Hendrycks category: F(2,51) stem (18 subjects),
    F(2,33) social sciences (12), F(2,39) other (14); before, F(6,119) over every config."""
    hendrycks = mmlu_subject_categories("hendrycks")
    subjects = sorted(s for s in hendrycks if s != "moral_scenarios")
    per = 8
    subj = [s for s in subjects for _ in range(per)]
    root = tmp_path / "res"
    mats = {}
    for j, config in enumerate(SEVEN):
        mats[config] = _abilities(9, len(subj), 100 + j)
        for i in range(9):
            _write(root, f"m{i}", config, mats[config][i], subjects=subj)
    rep = write_report([root], tmp_path / "r", plots=False, protocol=get_protocol("na-paper"))
    anova = pd.read_csv(tmp_path / "r" / "tables" / "anova.csv").set_index("category")
    dfs = {c: (anova.loc[c, "df_between"], anova.loc[c, "df_within"]) for c in anova.index}
    assert dfs["stem"] == (2, 51)
    assert dfs["social_sciences"] == (2, 33)
    assert dfs["other"] == (2, 39)
    assert dfs["humanities"] == (2, 33)  # 13 subjects less moral_scenarios
    # the F of stem from KR-20 written out and scipy's one-way ANOVA
    stem = [s for s in subjects if hendrycks[s] == "stem"]
    groups = []
    for config in ("original", "na_keyed", "na_distractor"):
        mat = mats[config].astype(float)
        groups.append([_kr20(mat[:, [k for k, s in enumerate(subj) if s == x]]) for x in stem])
    assert anova.loc["stem", "F"] == pytest.approx(sps.f_oneway(*groups).statistic)
    t2 = rep.tables["paper_table2_hendrycks"]
    assert set(t2["variant"]) == {"original", "na_keyed", "na_distractor"}
    t1 = rep.tables["paper_table1_hendrycks"]
    assert set(t1["config"]) == {"original", "na_keyed", "na_distractor"}
    assert rep.protocol is not None and rep.protocol.sources["report.conditions"] == "paper text"
    md = (tmp_path / "r" / "report.md").read_text()
    assert "over its conditions (original, na_keyed, na_distractor) under the `hendrycks`" in md


def test_na_paper_names_a_condition_that_was_not_evaluated(tmp_path: Path) -> None:
    root = tmp_path / "res"
    _eight_models(root)
    rep = write_report([root], tmp_path / "r", plots=False, protocol=get_protocol("na-paper"))
    assert (
        "protocol na-paper: condition(s) na_distractor not evaluated; its Tables 1-2 and "
        "ANOVA compare original, na_keyed only"
    ) in rep.notes


def test_underflowed_p_values_print_as_a_bound(tmp_path: Path) -> None:
    assert fmt_p(0.0) == fmt_p(5e-324) == "< 1e-300"
    assert fmt_p(1e-299) == "1.00e-299" and fmt_p(0.5) == "0.5"
    root = tmp_path / "res"
    n = 2000  # 2,000 discordant pairs: McNemar's p underflows to 0 in doubles
    _write(root, "m", "original", np.ones(n, bool))
    _write(root, "m", "na_keyed", np.zeros(n, bool))
    rep = write_report([root], tmp_path / "r", plots=False)
    assert rep.tables["headline"]["mcnemar_p"].iloc[0] == 0.0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "0 (exact)" not in md and "< 1e-300" in md


def test_a_run_whose_na_keyed_ids_differ_from_original_is_named(tmp_path: Path) -> None:
    """Ids of another build (or a renamed config) pair with nothing: the run used to vanish
    from the headline, and every run from the panel, without a word."""
    root = tmp_path / "res"
    _eight_models(root, n=30)
    other = [f"mmlu/all/test/{k:05d}" for k in range(500, 530)]
    _write(root, "m9", "original", np.ones(30, bool))
    _write(root, "m9", "na_keyed", np.ones(30, bool), ids=other)
    rep = write_report([root], tmp_path / "r", plots=False)
    assert (
        "run m9: 30 of 30 na_keyed row(s) have no original row of their source item (ids "
        "differ between the configs?): left out of the headline"
    ) in rep.notes
    assert (
        "config na_keyed: no item every model run answered (ids differ between runs): no panel"
    ) in rep.notes
    md = (tmp_path / "r" / "report.md").read_text()
    assert "run m9: 30 of 30 na_keyed row(s)" in md


def test_a_run_without_original_results_is_named(tmp_path: Path) -> None:
    """A model or baseline run of na_keyed only pairs with nothing: it left the headline
    without a word (only runs with some original rows were checked, and only models)."""
    root = tmp_path / "res"
    _eight_models(root, n=30)
    _write(root, "m9", "na_keyed", np.ones(30, bool))
    _write(root, "reference_oracle", "na_keyed", np.ones(30, bool), backend="reference")
    rep = write_report([root], tmp_path / "r", plots=False)
    assert "m9" not in set(rep.tables["headline"]["run"])
    for run in ("m9", "reference_oracle"):
        assert (
            f"run {run}: no original results, so its 30 na_keyed row(s) pair with nothing: "
            "left out of the headline"
        ) in rep.notes
    assert "run m9: no original results" in (tmp_path / "r" / "report.md").read_text()


def test_headline_plot_fits_a_page_with_intervals(tmp_path: Path) -> None:
    """28 models x 6 variants: the plot was 1.1 in per bar group wide (3,738 px on a
    28-model panel); now 7.5 in (825 px at 110 dpi) whatever the panel, with intervals."""
    from PIL import Image

    from nabench.evaluation.plots import PAGE_WIDTH_IN, original_vs_variant

    variants = SEVEN[1:]
    rows = [
        {"run": f"HuggingFaceTB_SmolLM2-135M-Instruct-{i:02d}", "role": "model", "config": v,
         "n": 14042, "acc_original": 0.5, "acc_variant": 0.3}
        for i in range(28) for v in variants
    ]  # fmt: skip
    path = original_vs_variant(pd.DataFrame(rows), tmp_path / "ov.png")
    assert path is not None
    width, _ = Image.open(path).size
    assert width <= PAGE_WIDTH_IN * 110 + 25  # tight bounding box: 0.1 in padding a side


def test_rows_without_a_subject_are_reported_as_none(tmp_path: Path) -> None:
    """A source row with a null subject reaches the results (it is a valid item); the
    report shows it under `(none)` (it crashed: a categorical takes no new value)."""
    root = tmp_path / "res"
    subjects = [None if k % 3 == 0 else SUBJECTS[k % len(SUBJECTS)] for k in range(30)]
    rng = np.random.default_rng(3)
    for config in ("original", "na_keyed"):
        _write(root, "m1", config, rng.random(30) < 0.6, subjects=subjects)
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["report", str(root), "--out", str(out), "--no-plots"])
    assert res.exit_code == 0, res.output
    per_subject = pd.read_csv(out / "tables" / "headline_subjects.csv")
    assert per_subject.loc[per_subject["subject"] == "(none)", "n"].tolist() == [10]
    assert per_subject["n"].sum() == 30


def _md_rows(section: str) -> list[dict[str, str]]:
    """The rows of the first pipe table in ``section``, as column → cell."""
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    cols = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(cols, (c.strip() for c in ln.strip("|").split("|")), strict=True))
            for ln in lines[2:]]  # fmt: skip


def test_each_runs_invalid_rate_and_invalid_credit_are_shown(tmp_path: Path) -> None:
    """Accuracy counts an invalid answer wrong, `score` gives it the run's credit: the runs
    tables of report.md and report.html showed neither the credit nor the run's invalid
    share, and report.json had no credit, so the two could not be told apart per run."""
    root = tmp_path / "res"
    n = 40
    _write(root, "m", "original", np.ones(n, bool), invalid=np.arange(n) % 4 == 0)  # 10 of 40
    _write(root, "m", "na_keyed", np.ones(n, bool))
    write_report([root], tmp_path / "r", plots=False)
    md = (tmp_path / "r" / "report.md").read_text()
    (run,) = _md_rows(md.split("## Runs")[1].split("Models (the panel)")[0])
    assert (run["invalid_rate"], run["invalid_credit"]) == ("0.125", "0.250")  # 10 of 80
    html = (tmp_path / "r" / "report.html").read_text()
    runs_html = html.split('id="runs"')[1].split("</table>")[0]
    assert ">invalid_rate</th>" in runs_html and ">invalid_credit</th>" in runs_html
    configs = json.loads((tmp_path / "r" / "report.json").read_text())["configs"]
    assert {(c["config"], c["invalid_rate"], c["invalid_credit"]) for c in configs} == {
        ("original", 0.25, 0.25),
        ("na_keyed", 0.0, 0.25),
    }


def test_a_run_whose_answers_are_all_invalid_is_kept_out_of_the_panel(tmp_path: Path) -> None:
    """A run that parsed no answer (a broken prompt format, a dead endpoint) measured
    nothing, yet its all-wrong row joined the panel without a word and raised KR-20 (0.950
    to 0.967 in a reviewer's test). It keeps its accuracy rows, leaves KR-20, D and the
    correlations, and a note says so in report.md, report.json and report.html."""
    root = tmp_path / "res"
    scores = _abilities(6, 60, 1)
    for i in range(6):
        for config in ("original", "na_keyed"):
            _write(root, f"m{i}", config, scores[i])
    for config in ("original", "na_keyed"):
        _write(root, "broken", config, np.zeros(60, bool), invalid=np.ones(60, bool))
    rep = write_report([root], tmp_path / "r", plots=False)
    panel = rep.tables["panel"].set_index("config")
    for config in ("original", "na_keyed"):
        assert panel.loc[config, "n_models"] == 6
        assert panel.loc[config, "kr20"] == pytest.approx(_kr20(scores.astype(float)))
        assert panel.loc[config, "left_out"] == "broken"
    assert rep.tables["correlations"]["n_models"].tolist() == [6]
    assert "broken" in set(rep.tables["configs"]["run"])  # its accuracy is still reported
    notes = [n for n in rep.notes if "broken" in n]
    assert len(notes) == 2 and all("every answer invalid" in n for n in notes)
    out = tmp_path / "r"
    assert notes[0] in (out / "report.md").read_text()
    assert notes[0] in json.loads((out / "report.json").read_text())["notes"]
    assert notes[0] in (out / "report.html").read_text()


def test_means_over_models_leave_out_a_run_that_measured_nothing(tmp_path: Path) -> None:
    """The mean drop over models per subject (report.md's ranking, report.html's drop
    tables, the NA paper's Fig. 6) pooled a run whose every na_keyed answer was invalid,
    whose 'drop' is its original accuracy: a reviewer's ranking read 0.3125 where the six
    models that answered give 0.214. The means leave it out, as the panel does; its own
    headline rows stay."""
    root = tmp_path / "res"
    n = 60
    orig, keyed = _abilities(6, n, 1), _abilities(6, n, 2)
    for i in range(6):
        _write(root, f"m{i}", "original", orig[i])
        _write(root, f"m{i}", "na_keyed", keyed[i])
    _write(root, "broken", "original", orig[5])
    _write(root, "broken", "na_keyed", np.zeros(n, bool), invalid=np.ones(n, bool))
    rep = write_report([root], tmp_path / "r")
    subj = np.array([SUBJECTS[k % len(SUBJECTS)] for k in range(n)])
    expected = {s: float((orig[:, subj == s].mean(1) - keyed[:, subj == s].mean(1)).mean())
                for s in SUBJECTS}  # fmt: skip
    md = (tmp_path / "r" / "report.md").read_text()
    rows = _md_rows(md.split("Subjects ranked by drop: original → na_keyed")[1].split("##")[0])
    assert {r["subject"]: float(r["mean_drop"]) for r in rows} == pytest.approx(expected, abs=5e-4)
    assert {r["models"] for r in rows} == {"6"}
    html = (tmp_path / "r" / "report.html").read_text()
    drops = html.split('id="subject-drops"')[1].split("</table>")[0]
    for s, v in expected.items():
        cell = drops.split(s)[1].split('data-col="na_keyed" data-value="')[1]
        assert float(cell.split('"')[0]) == pytest.approx(v, abs=1e-12), s
    assert "broken" in set(rep.tables["headline_subjects"]["run"])  # its rows are kept


def test_panel_status_counts_the_panel_not_the_model_runs(tmp_path: Path) -> None:
    """Five model runs, one all invalid: every panel has four models, yet report.json said
    `panel_status: ok` and report.md rendered the panel sections as complete, since the
    status counted model runs."""
    root = tmp_path / "res"
    scores = _abilities(4, 60, 1)
    for i in range(4):
        _write(root, f"m{i}", "original", scores[i])
    _write(root, "broken", "original", np.zeros(60, bool), invalid=np.ones(60, bool))
    write_report([root], tmp_path / "r", plots=False)
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert len(data["models"]) == 5 and data["panel"][0]["n_models"] == 4
    assert data["panel_status"] != "ok"
    _write(root, "m4", "original", _abilities(5, 60, 1)[4])
    write_report([root], tmp_path / "r2", plots=False)
    assert json.loads((tmp_path / "r2" / "report.json").read_text())["panel_status"] == "ok"
