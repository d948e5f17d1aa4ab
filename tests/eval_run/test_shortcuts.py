"""The NA shortcut strategies (always-na, never-na, always-aota) on a real 200-item MMLU-NA
build, and the report's flag on configs a shortcut wins."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP

from nabench.cli import main as nabench_main
from nabench.cli.evaluation import eval_cmd
from nabench.evaluation.report import write_report
from nabench.evaluation.strategies import ItemBatch, get_strategy

NEW = ("always-na", "never-na", "always-aota")
CONFIGS = ("original", "na_keyed", "na_keyed__answer_not_found", "na_distractor",
           "all_of_the_above")  # fmt: skip


def _invoke(cmd: Any, args: list[str]) -> None:
    result = CliRunner().invoke(cmd, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_strategies_pick_by_option_text() -> None:
    b = ItemBatch.from_lists(
        ["a", "b", "c"],
        [["x", "none  of the ABOVE", "y"], ["None of the above", "p", "All of the above"],
         ["q", "r", "s"]],
        [0, 0, 0],
    )  # fmt: skip
    assert get_strategy("always-na").choose(b).tolist() == [1, 0, 0]  # no NA: option A
    assert get_strategy("never-na").choose(b).tolist() == [0, 1, 0]
    assert get_strategy("always-aota").choose(b).tolist() == [0, 2, 0]


def _first_by_text(choices: list[str], texts: set[str], want: bool) -> int:
    """Reference: the first option whose collapsed, casefolded text is (not) in `texts`."""
    for i, c in enumerate(choices):
        if (" ".join(c.split()).casefold() in texts) == want:
            return i
    return 0


_OPTION = st.sampled_from(
    ["None of the above", "none  OF the above", "Answer not found", "All of the above",
     "ALL OF THE ABOVE ", "Paris", "x", "", "Straße", "STRASSE"]
)  # fmt: skip


@CHEAP
@given(st.lists(st.lists(_OPTION, min_size=1, max_size=6), min_size=1, max_size=30))
def test_text_strategies_equal_a_per_row_reference(choices: list[list[str]]) -> None:
    """The vectorised first-match equals the per-row definition, rows of any length."""
    batch = ItemBatch.from_lists([str(i) for i in range(len(choices))], choices,
                                 [0] * len(choices))  # fmt: skip
    na = {"none of the above", "answer not found", "no valid options",
          "none of the options given is correct"}  # fmt: skip
    cases = {"always-na": (na, True), "never-na": (na, False),
             "always-aota": ({"all of the above"}, True)}  # fmt: skip
    for name, (texts, want) in cases.items():
        expected = [_first_by_text(cs, texts, want) for cs in choices]
        assert get_strategy(name).choose(batch).tolist() == expected, name


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> tuple[Path, Path]:
    built = tmp_path_factory.mktemp("mmlu200") / "mmlu-na"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "200"]
    _invoke(nabench_main, [*args, "--out", str(built), "--quiet"])
    out = tmp_path_factory.mktemp("refs")
    for name in (*NEW, "majority"):
        cmd = [str(built), "--backend", "reference", "--model", name, "--out", str(out)]
        _invoke(eval_cmd, [*cmd, *(x for c in CONFIGS for x in ("--config", c))])
    return built, out


def _accuracy(out: Path, name: str, config: str) -> float:
    return float(pd.read_parquet(out / f"reference_{name}" / f"{config}.parquet")["correct"].mean())


def test_always_na_wins_na_keyed_only(runs: tuple[Path, Path]) -> None:
    built, out = runs
    for config in ("na_keyed", "na_keyed__answer_not_found"):
        assert _accuracy(out, "always-na", config) == 1.0
        assert _accuracy(out, "never-na", config) == 0.0
    assert _accuracy(out, "always-na", "na_distractor") == 0.0  # NA is never the key there
    assert _accuracy(out, "always-aota", "all_of_the_above") == 0.0
    rows = pd.read_parquet(next((built / "original").glob("*.parquet")))
    gold_a = float((rows["answer"].to_numpy(np.int64) == 0).mean())
    assert _accuracy(out, "always-na", "original") == pytest.approx(gold_a)  # falls back to A


def test_report_flags_the_configs_a_shortcut_wins(runs: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = runs
    rep = write_report([out], tmp_path / "r", plots=False, html=False)
    sc = rep.tables["shortcuts"]
    assert set(sc["strategy"]) == set(NEW)  # majority reads the key distribution: no shortcut
    flagged = set(map(tuple, sc.loc[sc["beats_majority"], ["strategy", "config"]].to_numpy()))
    assert flagged == {("always-na", "na_keyed"), ("always-na", "na_keyed__answer_not_found")}
    row = sc[(sc["strategy"] == "always-na") & (sc["config"] == "na_keyed")].iloc[0]
    assert row["margin"] == pytest.approx(row["ci_low"] - row["majority_baseline"])
    md = (tmp_path / "r" / "report.md").read_text()
    section = md.split("## Shortcuts", 1)[1].split("\n## ", 1)[0]
    assert "| na_keyed | reference_always-na |" in section
    assert "na_distractor" not in section


def test_the_page_shows_what_report_md_shows(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """report.html's headline and shortcut tables have report.md's columns (one list,
    `HEADLINE_SHOWN`): the adjusted p, FDR flag, MDE and clustered test were in the CSVs and
    report.md but not on the page."""
    _, out = runs
    write_report([out], tmp_path / "r", plots=False, html=True)
    page = (tmp_path / "r" / "report.html").read_text("utf-8")
    md = (tmp_path / "r" / "report.md").read_text("utf-8")
    head = page.split('<table id="headline">', 1)[1].split("</thead>", 1)[0]
    page_cols = re.findall(r'<th scope="col">([^<]+)</th>', head)
    md_head = md.split("## Headline", 1)[1].split("\n| ", 1)[1].split("\n", 1)[0]
    md_cols = [c.strip() for c in ("| " + md_head).strip("|").split("|")]
    assert page_cols == md_cols
    for col in ("mcnemar_p_bh", "significant_fdr", "mde_80", "cl_p"):
        assert col in page_cols
    shortcuts = page.split('<table id="shortcuts">', 1)[1].split("</table>", 1)[0]
    assert shortcuts.count("<tr>") == 1 + 2  # header + na_keyed, na_keyed__answer_not_found
    assert "reference_always-na" in shortcuts and "na_distractor" not in shortcuts


def test_worst_case_columns_and_no_shortcut_run_match_report_md(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = runs
    only = tmp_path / "only-majority"
    shutil.copytree(out / "reference_majority", only / "reference_majority")
    write_report([only], tmp_path / "r", plots=False, html=True)
    page = (tmp_path / "r" / "report.html").read_text("utf-8")
    md = (tmp_path / "r" / "report.md").read_text("utf-8")
    assert "No shortcut strategy was run" in md and "No shortcut strategy was run" in page
    assert '<table id="shortcuts">' not in page
    head = page.split('<table id="worst-case">', 1)[1].split("</thead>", 1)[0]
    page_cols = re.findall(r'<th scope="col">([^<]+)</th>', head)
    section = md.split("### Worst case over variants", 1)[1]
    md_cols = [c.strip() for c in section.split("\n| ", 1)[1].split("\n", 1)[0].split("|")]
    md_cols = [c for c in md_cols if c]
    assert page_cols == md_cols and "variants" in page_cols
