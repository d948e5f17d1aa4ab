"""report.html in a real browser (Debian's chromium driven by Playwright, no download):
the headline numbers equal report.json, the outcome filter shows exactly the ids a pandas
computation over the result parquet files finds, an item opens by its link (options, key,
inserted NA text, answers, raw output), keyboard, narrow and dark views work, the page
makes no network request, and a harness run (lm-eval --log_samples) is on the page like
every run of report.json.

Data: a real MMLU-NA build of the dev split (285 items, 57 subjects), a reference
strategy run by `nabench eval`, and five seeded model runs written in the on-disk
format `nabench eval` writes (answers drawn at random against the build's real keys),
so outcomes are mixed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from testdeps import require

from nabench.cli import main as nabench_main
from nabench.cli.evaluation import eval_cmd, report_cmd

pytestmark = pytest.mark.slow
CONFIGS = ("original", "na_keyed", "all_of_the_above")
MODELS = [f"model{k:02d}" for k in range(5)]


def _invoke(cmd: Any, args: list[str]) -> str:
    result = CliRunner().invoke(cmd, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _rows(built: Path, config: str) -> pd.DataFrame:
    return pd.read_parquet(next((built / config).glob("*.parquet")))


def _write_model(root: Path, built: Path, run: str, skill: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = root / run
    d.mkdir(parents=True)
    for config in CONFIGS:
        rows = _rows(built, config)
        n = len(rows)
        k = rows["choices"].map(len).to_numpy()
        gold = rows["answer"].to_numpy()
        pick = np.where(rng.random(n) < skill, gold, rng.integers(0, k))
        invalid = rng.random(n) < 0.08
        parsed = [None if bad else "ABCDE"[p] for p, bad in zip(pick, invalid, strict=True)]
        raw = [f"I cannot tell ({run})" if p is None else f"Answer: {p}" for p in parsed]
        pd.DataFrame({
            "id": rows["id"], "source_id": rows["id"], "config": config, "model": run,
            "subject": rows["subject"], "raw_output": raw, "parsed": parsed,
            "gold": ["ABCDE"[g] for g in gold], "correct": (pick == gold) & ~invalid,
            "invalid": invalid, "score": np.where(invalid, 0.25, (pick == gold) * 1.0),
            "confidence": rng.uniform(0.3, 1.0, n).round(4), "n_choices": k,
        }).to_parquet(d / f"{config}.parquet", index=False)  # fmt: skip
        summary = {"config": config, "model": f"org/{run}", "backend": "local",
                   "mode": "generate", "kind": "mc", "invalid_credit": 0.25,
                   "dataset": str(built), "revision": None, "prompt_version": "v-test"}  # fmt: skip
        (d / f"{config}.summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    base = tmp_path_factory.mktemp("html")
    built = base / "mmlu-na"
    # the dev split: 5 items of each of the 57 subjects
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--split", "dev"]
    _invoke(nabench_main, [*args, "--out", str(built), "--quiet"])
    res = base / "results"
    cfg_args = [a for c in CONFIGS for a in ("--config", c)]
    _invoke(eval_cmd, [str(built), "--backend", "reference", "--model", "longest",
                       "--out", str(res), *cfg_args])  # fmt: skip
    for k, run in enumerate(MODELS):
        _write_model(res, built, run, skill=0.35 + 0.12 * k, seed=k)
    _invoke(report_cmd, [str(res), "--out", str(base / "report")])
    return base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    api = require("playwright.sync_api", "the browser extra: pip install -e '.[browser]'")
    exe = shutil.which("chromium")
    if exe is None:  # .ci/run installs it; under CI a missing browser fails
        message = "chromium not found on PATH (Debian package `chromium`)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = ctx.new_page()
    requests: list[str] = []
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:  # every request is counted; only the page file may load
        requests.append(r.request.url)
        if r.request.url.startswith("file://") and r.request.url.split("#")[0].endswith(
            "report.html"
        ):
            r.continue_()
        else:
            r.abort()

    pg.route("**/*", route)
    yield pg, requests
    assert errors == []
    ctx.close()


def _expect(locator: Any) -> Any:
    return require("playwright.sync_api").expect(locator)


def _open(pg: Any, report_dir: Path, fragment: str = "") -> None:
    pg.goto((report_dir / "report" / "report.html").as_uri() + fragment)
    # locator checks, not wait_for_function: the page's CSP forbids string evaluation
    _expect(pg.locator("body")).to_have_attribute("data-ready", "1", timeout=30_000)


def _visible_ids(pg: Any) -> list[str]:
    ids: list[str] = []
    while True:
        ids += pg.eval_on_selector_all("#rows li", "els => els.map(e => e.dataset.id)")
        if pg.is_disabled("#next"):
            return ids
        pg.click("#next")


def _flip_ids(res: Path, run: str, variant: str) -> set[str]:
    o = pd.read_parquet(res / run / "original.parquet")
    v = pd.read_parquet(res / run / f"{variant}.parquet")
    m = o.merge(v, on="source_id", suffixes=("_o", "_v"))
    return set(m.loc[m["correct_o"] & ~m["correct_v"], "source_id"])


def test_headline_numbers_equal_report_json(report_dir: Path, page: tuple[Any, list[str]]) -> None:
    pg, requests = page
    _open(pg, report_dir)
    data = json.loads((report_dir / "report" / "report.json").read_text())
    cells = pg.eval_on_selector_all(
        "#headline tbody tr",
        """rows => rows.map(r => Object.fromEntries([...r.cells].map(c =>
             [c.dataset.col, [c.textContent, c.dataset.value ?? null]])))""",
    )
    assert len(cells) == len(data["headline"]) == 6 * 2  # 6 runs × 2 variants
    shown = {(c["run"][0], c["config"][0]): c for c in cells}
    for h in data["headline"]:
        c = shown[(h["run"], h["config"])]
        for col in ("acc_original", "acc_variant", "diff", "rel_drop"):
            assert c[col][0] == f"{h[col]:.3f}"
            assert float(c[col][1]) == pytest.approx(h[col], rel=1e-12)
        assert json.loads(c["diff_ci"][1]) == pytest.approx(h["diff_ci"])
        assert int(c["n"][0]) == h["n"]
        assert float(c["mcnemar_p"][1]) == pytest.approx(h["mcnemar_p"])
    runs = pg.inner_text("#runs")
    assert "v-test" in runs and "org/model03" in runs and "reference" in runs
    assert requests == [(report_dir / "report" / "report.html").as_uri()]


def test_outcome_filter_matches_pandas(report_dir: Path, page: tuple[Any, list[str]]) -> None:
    pg, requests = page
    _open(pg, report_dir)
    res = report_dir / "results"
    pg.select_option("#f-variant", "na_keyed")
    pg.select_option("#f-model", "model03")
    pg.select_option("#f-outcome", "flip")
    assert "right on original, wrong on na_keyed" in pg.inner_text("#f-outcome")
    want = _flip_ids(res, "model03", "na_keyed")
    assert len(want) > 0 and sorted(_visible_ids(pg)) == sorted(want)
    pg.select_option("#f-model", "")  # any model: the union over models, baselines aside
    union = set().union(*(_flip_ids(res, m, "na_keyed") for m in MODELS))
    assert union != want and sorted(_visible_ids(pg)) == sorted(union)
    pg.select_option("#f-outcome", "invalid")
    pg.select_option("#f-model", "model01")
    inv = pd.read_parquet(res / "model01" / "na_keyed.parquet")
    assert sorted(_visible_ids(pg)) == sorted(inv.loc[inv["invalid"], "source_id"])
    pg.select_option("#f-outcome", "")
    subj = pd.read_parquet(res / "model01" / "original.parquet")
    pg.select_option("#f-subject", "anatomy")
    anatomy = subj.loc[subj["subject"] == "anatomy", "id"]
    assert 0 < len(anatomy) < len(subj) and sorted(_visible_ids(pg)) == sorted(anatomy)
    pg.select_option("#f-subject", "")
    word = anatomy.iloc[0]
    pg.fill("#f-text", word)
    _expect(pg.locator("#rows li")).to_have_count(1)
    assert _visible_ids(pg) == [word]
    assert len(requests) == 1


def test_tables_fit_their_column(report_dir: Path, page: tuple[Any, list[str]]) -> None:
    """At a laptop's width every table fits the page's column: no box scrolls sideways
    (the headline table overflowed it, its run names and headers on one line)."""
    pg, _ = page
    _open(pg, report_dir)
    over = pg.evaluate(
        """[...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth)
             .map(e => e.querySelector('table').id + ' ' + e.scrollWidth + '>' + e.clientWidth)"""
    )
    assert over == []
    assert pg.locator("#headline th", has_text="invalid_share_variant").count() == 1


def test_item_link_keyboard_narrow_dark(
    report_dir: Path, page: tuple[Any, list[str]], tmp_path: Path
) -> None:
    pg, requests = page
    res, built = report_dir / "results", report_dir / "mmlu-na"
    item = sorted(_flip_ids(res, "model03", "na_keyed"))[0]
    _open(pg, report_dir, f"#item={item}")
    assert pg.is_visible("#item-view") and item in pg.inner_text("#item-h")
    keyed = _rows(built, "na_keyed").set_index("id").loc[item]
    block = pg.locator("#item-body .variant", has=pg.locator("h4", has_text="na_keyed")).first
    options = block.locator("li").all_inner_texts()
    assert [o.replace("key", "").replace("inserted", "").strip() for o in options] == list(
        keyed["choices"]
    )
    assert block.locator("li.na").inner_text().startswith(keyed["na_text"])
    key_index = block.locator("li").evaluate_all("els => els.findIndex(e => e.matches('.key'))")
    assert key_index == keyed["answer"]
    raw = pd.read_parquet(res / "model03" / "na_keyed.parquet").set_index("source_id")
    cell = pg.locator("#answers td[data-run='model03'][data-config='na_keyed']")
    # a wrong answer is ✗; an unparseable one (wrong too, under strict accuracy) is ?
    assert ("?" if pd.isna(raw.loc[item, "parsed"]) else "✗") in cell.inner_text()
    assert cell.locator("pre").text_content() == raw.loc[item, "raw_output"]
    pg.screenshot(path=str(tmp_path / "item.png"))
    assert (tmp_path / "item.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # keyboard only: focus the first row's link and press Enter
    pg.focus("#rows li a")
    other = pg.eval_on_selector("#rows li", "e => e.dataset.id")
    pg.keyboard.press("Enter")
    _expect(pg.locator("#item-h")).to_contain_text(other)
    # narrow window: nothing wider than the viewport (tables scroll in their own box)
    pg.set_viewport_size({"width": 360, "height": 800})
    wide = pg.evaluate(
        """[...document.querySelectorAll('body *')].filter(e => !e.closest('.scroll')
             && e.getBoundingClientRect().right > 361).map(e => e.tagName + '.' + e.className)"""
    )
    assert pg.evaluate("document.documentElement.scrollWidth") <= 360, wide
    pg.emulate_media(color_scheme="dark")
    bg = pg.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(x) for x in bg[bg.index("(") + 1 : -1].split(",")[:3]) < 3 * 60
    assert len(requests) == 1


@pytest.fixture(scope="module")
def harness_report(report_dir: Path) -> Path:
    """`nabench report` over the nabench runs and a real lm-eval `--log_samples` run (its
    `dummy` model: random log-likelihoods, no weights) of the same build."""
    import subprocess
    import sys

    logs = report_dir / "lm-eval"
    tasks = "nabench_mmlu_na_original,nabench_mmlu_na_na_keyed"
    offline = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--include_path",
         str(report_dir / "mmlu-na" / "lm_eval"), "--tasks", tasks, "--model", "dummy",
         "--limit", "12", "--log_samples", "--output_path", str(logs)],
        capture_output=True, text=True, env=offline, timeout=600,
        cwd=report_dir / "mmlu-na",  # a build's tasks read its parquet relative to the build
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    out = report_dir / "report-harness"
    _invoke(report_cmd, [str(report_dir / "results"), str(logs), "--out", str(out)])
    return out


def test_harness_runs_are_on_the_page(
    report_dir: Path, harness_report: Path, page: tuple[Any, list[str]]
) -> None:
    pg, requests = page
    data = json.loads((harness_report / "report.json").read_text())
    runs = [*data["models"], *data["baselines"]]
    assert "lm-eval__dummy" in runs and len(runs) == len(MODELS) + 2
    pg.goto((harness_report / "report.html").as_uri())
    _expect(pg.locator("body")).to_have_attribute("data-ready", "1", timeout=30_000)
    shown = pg.eval_on_selector_all(
        "#runs tbody td[data-col='run']", "cells => cells.map(c => c.textContent)"
    )
    assert sorted(shown) == sorted(runs)
    options = pg.eval_on_selector_all("#f-model option", "os => os.map(o => o.value)")
    assert set(runs) <= set(options)
    # the item browser holds the harness run's answers (lm-eval ran the first 12 items)
    item = _rows(report_dir / "mmlu-na", "original")["id"].iloc[0]
    pg.goto((harness_report / "report.html").as_uri() + f"#item={item}")
    cell = pg.locator("#answers td[data-run='lm-eval__dummy'][data-config='original']")
    assert cell.count() == 1 and cell.inner_text().strip()
    assert set(requests) == {(harness_report / "report.html").as_uri()}
