"""The harnesses against the real SmolLM2: `lm-eval run` (hf, the converted HF folder) on
fresh mmlu-na and arc-na builds, `inspect eval nabench/mcq` against the local llama.cpp
server, `nabench eval --prompt-format lm-eval` on the same server, and `nabench report`
over one run of each: one accuracy table with three rows of the same items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.evaluation.external import read_external
from nabench.llm import SMOLLM2_ID, default_hf_dir

pytestmark = pytest.mark.slow

N = 10
OFFLINE = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    # Never from the checkout: its nabench.egg-info (left by `pip install -e .`) shadows the
    # installed metadata, and inspect_ai then registers the task as `mcq`, not `nabench/mcq`.
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env or OFFLINE, timeout=900, cwd=cwd
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-4000:]
    return proc


def _lm_eval_hf(build: Path, tasks: str, limit: int, out: Path) -> dict:
    hf = default_hf_dir()
    assert (hf / "config.json").is_file(), f"no HF folder at {hf}: run `nabench llm convert-hf`"
    _run(
        [
            sys.executable,
            "-m",
            "lm_eval",
            "run",
            "--include_path",
            str(build / "lm_eval"),
            "--tasks",
            tasks,
            "--model",
            "hf",
            "--model_args",
            f"pretrained={hf},dtype=float32",
            "--batch_size",
            "8",
            "--limit",
            str(limit),
            "--log_samples",
            "--output_path",
            str(out),
        ],
        cwd=build,  # a build's tasks read its parquet relative to the build (README)
    )
    (results,) = out.rglob("results_*.json")  # fmt: skip
    return json.loads(results.read_text())


@pytest.fixture(scope="module")
def lm_eval_mmlu(mmlu_na: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lm-eval-mmlu")
    tasks = "nabench_mmlu_na_original,nabench_mmlu_na_na_keyed"
    res = _lm_eval_hf(mmlu_na, tasks, 25, out)
    for task in tasks.split(","):
        acc = res["results"][task]["acc,none"]
        assert 0.0 <= acc <= 1.0 and res["n-samples"][task]["effective"] == 25
    return out


def test_lm_eval_group_on_arc_reports_one_accuracy_per_config(arc_na: Path, tmp_path: Path) -> None:
    res = _lm_eval_hf(arc_na, "nabench_arc_na", 3, tmp_path)
    configs = json.loads((arc_na / "build.json").read_text())["lm_eval"]["configs"]
    tasks = {f"nabench_arc_na_{c}" for c in configs}
    assert tasks <= set(res["results"]) and {"original", "na_keyed", "all_of_the_above"} <= set(
        configs
    )
    assert all(0.0 <= res["results"][t]["acc,none"] <= 1.0 for t in tasks)
    runs = read_external(tmp_path)
    assert {r.config for r in runs} == set(configs)
    assert all(len(r.responses) == 3 for r in runs)


def test_three_harnesses_one_report(
    mmlu_na: Path,
    lm_eval_mmlu: Path,
    llama_server: str,
    inspect_entry_point: None,
    tmp_path: Path,
) -> None:
    logs = tmp_path / "inspect"
    env = {**OFFLINE, "LLAMACPP_BASE_URL": llama_server, "LLAMACPP_API_KEY": "none"}
    _run([sys.executable, "-m", "inspect_ai", "eval", "nabench/mcq", "-T", f"dataset={mmlu_na}",
          "-T", "config=original", "--model", f"openai-api/llamacpp/{SMOLLM2_ID}",
          "--limit", str(N), "--max-tokens", "16", "--log-dir", str(logs), "--display", "none"],
         tmp_path, env)  # fmt: skip
    (inspect_run,) = read_external(logs)
    assert inspect_run.config == "original" and len(inspect_run.responses) == N
    ours = tmp_path / "nabench"
    runner = CliRunner()
    res = runner.invoke(
        main,
        ["eval", str(mmlu_na), "--config", "original", "--prompt-format", "lm-eval",
         "--backend", "openai", "--base-url", llama_server, "--model", SMOLLM2_ID,
         "--limit", str(N), "--out", str(ours), "--cache", str(tmp_path / "c.sqlite"), "--quiet"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    settings = json.loads((ours / f"{SMOLLM2_ID}__lm-eval" / "run.json").read_text())["settings"]
    assert (settings["prompt_format"], settings["mode"]) == ("lm-eval", "loglik")
    out = tmp_path / "report"
    res = runner.invoke(
        main,
        ["report", str(ours), str(lm_eval_mmlu), str(logs), "--out", str(out), "--no-plots",
         "--panel-min-coverage", "0.3"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    rows = [r for r in report["configs"] if r["config"] == "original"]
    runs = sorted(r["run"] for r in rows)
    assert runs == sorted(
        [f"{SMOLLM2_ID}__lm-eval", "inspect__openai-api_llamacpp_" + SMOLLM2_ID,
         "lm-eval__" + SMOLLM2_ID]
    ), runs  # fmt: skip
    assert set(runs) <= set(report["models"])  # the harnesses' runs are models, not baselines
    assert sorted(r["n"] for r in rows) == [N, N, 25]
