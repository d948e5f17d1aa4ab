"""End to end: build a 200-item MMLU-NA, evaluate the four reference strategies and the
local SmolLM2 model (small slices), rerun from the cache, then report over the panel and
check its numbers against an independent computation from the responses files."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from testdeps import require

from nabench.cli.evaluation import eval_cmd, report_cmd

STRATEGY_NAMES = ("always-a", "majority", "longest", "oracle")
CONFIGS = ("original", "na_keyed", "na_distractor")


def _invoke(cmd: Any, args: list[str]) -> str:
    result = CliRunner().invoke(cmd, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def built(mmlu_na_200: Path) -> Path:
    return mmlu_na_200  # the session's `--limit 200` build (tests/fixtures/builds.py)


@pytest.fixture(scope="module")
def ref_results(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("refs")
    for name in STRATEGY_NAMES:
        args = [str(built), "--backend", "reference", "--model", name, "--out", str(out)]
        for c in CONFIGS:
            args += ["--config", c]
        _invoke(eval_cmd, args)
    return out


def _config_rows(built: Path, config: str) -> pd.DataFrame:
    return pd.read_parquet(next((built / config).glob("*.parquet")))


def _summary(out: Path, run: str, config: str) -> dict[str, Any]:
    return json.loads((out / run / f"{config}.summary.json").read_text())


def test_reference_strategies_match_the_data(built: Path, ref_results: Path) -> None:
    for config in CONFIGS:
        rows = _config_rows(built, config)
        gold = rows["answer"]
        n = len(rows)
        share = gold.value_counts(normalize=True)
        # the first option of maximal length (numpy's argmax keeps the first of equal maxima)
        longest = rows["choices"].map(lambda cs: int(np.argmax([len(c) for c in cs])))
        expected = {
            "oracle": 1.0,
            "always-a": float((gold == 0).mean()),
            "majority": float(share.max()),
            "longest": float((longest == gold).mean()),
        }
        for name, acc in expected.items():
            s = _summary(ref_results, f"reference_{name}", config)
            assert s["n"] == n == 198
            assert s["accuracy"] == pytest.approx(acc), (name, config)
            assert s["majority_baseline"] == pytest.approx(float(share.max()))
            assert s["invalid_rate"] == 0.0 and s["calls"] == 0
            assert s["ci_low"] <= s["accuracy"] <= s["ci_high"]
            df = pd.read_parquet(ref_results / f"reference_{name}" / f"{config}.parquet")
            assert df["id"].tolist() == rows["id"].tolist()
            assert df["raw_output"].str.fullmatch(r"Answer: [A-D]").all()


@pytest.fixture(scope="module")
def local_results(
    built: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, list[str], list[str]]]:
    require("llama_cpp", "pip install 'nabench[llm]'")
    out = tmp_path_factory.mktemp("local")
    # beside, not inside: a results folder holds run folders only (`eval --out` refuses
    # one with other files at its top level)
    cache = tmp_path_factory.mktemp("cache") / "cache.sqlite"
    common = [str(built), "--backend", "local", "--out", str(out), "--cache", str(cache), "--quiet"]
    gen = [*common, "--config", "original", "--limit", "20", "--max-tokens", "32"]
    ll = [*common, "--mode", "loglik", "--config", "original", "--config", "na_keyed"]
    ll += ["--limit", "10", "--logprobs", "20"]
    first = [_invoke(eval_cmd, gen), _invoke(eval_cmd, ll)]
    again = [_invoke(eval_cmd, gen), _invoke(eval_cmd, ll)]
    yield out, first, again


def _local_run(out: Path, loglik: bool) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir() and p.name.endswith("__loglik") == loglik]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.slow
def test_local_model_generate_and_loglik_mechanics(
    local_results: tuple[Path, list[str], list[str]],
) -> None:
    out, _, _ = local_results
    gen_dir = _local_run(out, loglik=False)
    s = json.loads((gen_dir / "original.summary.json").read_text())
    assert s["n"] == 20 and s["mode"] == "generate" and s["max_tokens"] == 32
    df = pd.read_parquet(gen_dir / "original.parquet")
    assert len(df) == 20 and df["raw_output"].map(len).gt(0).all()
    # scores follow the documented rule: 1 correct, 0 wrong, 0.25 unparseable
    expect = [
        0.25 if pd.isna(p) else float(p == g) for p, g in zip(df["parsed"], df["gold"], strict=True)
    ]
    assert df["score"].tolist() == expect
    # accuracy is strict (share correct); the mean score with the credit is `score`
    assert s["accuracy"] == pytest.approx(df["correct"].mean())
    assert s["score"] == pytest.approx(df["score"].mean())
    assert s["invalid_rate"] == pytest.approx(df["parsed"].isna().mean())

    ll_dir = _local_run(out, loglik=True)
    for config in ("original", "na_keyed"):
        d = pd.read_parquet(ll_dir / f"{config}.parquet")
        assert len(d) == 10
        valid = d["parsed"].notna()
        assert valid.any()
        conf = d.loc[valid, "confidence"]
        assert ((conf > 0) & (conf <= 1)).all()
        for lps, parsed, c in zip(d["option_logprobs"], d["parsed"], d["confidence"], strict=True):
            if pd.isna(parsed):
                assert math.isnan(c)
                continue
            probs = [math.exp(x) for x in lps]
            assert "ABCD"[probs.index(max(probs))] == parsed
            assert c == pytest.approx(max(probs) / sum(probs))


@pytest.mark.slow
def test_rerun_makes_no_model_calls(local_results: tuple[Path, list[str], list[str]]) -> None:
    out, first, again = local_results
    assert "calls=20 " in first[0] and "cache_hits=0" in first[0]
    assert "calls=0 cache_hits=20" in again[0]
    assert again[1].count("calls=0 cache_hits=10") == 2
    s = json.loads((_local_run(out, False) / "original.summary.json").read_text())
    assert (s["calls"], s["cache_hits"], s["n"]) == (0, 20, 20)


@pytest.mark.slow
def test_report_over_the_panel(
    ref_results: Path, local_results: tuple[Path, list[str], list[str]], tmp_path: Path
) -> None:
    out_local = local_results[0]
    ll = _local_run(out_local, loglik=True).name
    rep = tmp_path / "report"
    # both local runs are one model covering 20 answers each: the report refuses the pair
    # (tests/eval_run/test_report_metrics.py), so it is given the loglik run alone
    printed = _invoke(report_cmd, [str(ref_results), str(out_local / ll), "--out", str(rep)])
    assert "5 run(s)" in printed
    md = (rep / "report.md").read_text()
    configs = pd.read_csv(rep / "tables" / "configs.csv").set_index(["run", "config"])
    # baselines are scored on the items the model answered: none on a config it did not run
    assert "na_distractor" not in configs.index.get_level_values("config")
    for config in ("original", "na_keyed"):
        assert configs.loc[("reference_oracle", config), "accuracy"] == 1.0
        a = pd.read_parquet(ref_results / "reference_always-a" / f"{config}.parquet")
        answered = pd.read_parquet(out_local / ll / f"{config}.parquet")["source_id"]
        share_a = a.loc[a["source_id"].isin(answered), "correct"].mean()
        assert configs.loc[("reference_always-a", config), "accuracy"] == pytest.approx(share_a)
    # the strategies are baselines: the panel holds the local model runs only, too few
    panel = pd.read_csv(rep / "tables" / "panel.csv").set_index("config")
    assert panel.loc["original", "n_models"] == 1  # the loglik run
    assert panel["kr20"].isna().all() and (panel["note"] == "needs ≥ 5 models").all()
    assert "needs ≥ 5 models" in md
    for name in STRATEGY_NAMES:
        assert f"`reference_{name}`" in md
    head = pd.read_csv(rep / "tables" / "headline.csv").set_index(["run", "config"])
    oracle = head.loc[("reference_oracle", "na_keyed")]
    assert oracle["role"] == "baseline" and oracle["diff"] == 0.0 and oracle["n"] == 10
    assert head.loc[(ll, "na_keyed"), "n"] == 10  # the loglik run answered 10 items of each
    conf = pd.read_csv(rep / "tables" / "confidence.csv")
    assert len(conf) >= 1 and conf["run"].str.endswith("__loglik").all()
    assert (conf["change"] == conf["conf_na_keyed"] - conf["conf_original"]).all()
    sections = ("## Headline", "## Accuracy per config", "## Panel reliability")
    sections += ("## Confidence change", "## Conventions")
    for section in sections:
        assert section in md
    for png in ("original_vs_variant", "confidence_change", "subject_drop_na_keyed"):
        assert (rep / "plots" / f"{png}.png").stat().st_size > 5_000
        assert f"plots/{png}.png" in md
