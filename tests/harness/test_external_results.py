"""lm-eval results as nabench results: a real `--log_samples` run (lm-eval's `dummy` model,
random log-likelihoods, no weights) mapped onto nabench ids and lm-eval's own `acc`; the
inspect task `nabench/mcq` scored against inspect's `mockllm` (usage given, so it downloads
no tokenizer). The inspect reader and the three-harness report run against real models in
test_harness_models.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from nabench.core.errors import NabenchError
from nabench.evaluation.external import read_external
from nabench.evaluation.results import load_results
from nabench.stage.exports.inspect_mcq import mcq

GROUP = "nabench_mmlu_na"
N = 8
OFFLINE = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def _lm_eval(build: Path, out: Path, tasks: str, *model: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--include_path", str(build / "lm_eval"),
         "--tasks", tasks, *model, "--limit", str(N), "--log_samples", "--output_path", str(out)],
        capture_output=True, text=True, env=OFFLINE, timeout=600,
        cwd=build,  # a build's tasks read its parquet relative to the build (README)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


@pytest.fixture(scope="module")
def lm_eval_dummy(mmlu_na: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lm-eval")
    tasks = f"{GROUP}_original,{GROUP}_all_of_the_above,{GROUP}_original_gen"
    _lm_eval(mmlu_na, out, tasks, "--model", "dummy")
    return out


def test_lm_eval_samples_map_to_nabench_ids_and_lm_evals_own_acc(
    mmlu_na: Path, lm_eval_dummy: Path
) -> None:
    runs = {(r.run, r.config): r for r in read_external(lm_eval_dummy)}
    assert set(runs) == {
        ("lm-eval__dummy", "original"),
        ("lm-eval__dummy", "all_of_the_above"),
        ("lm-eval__dummy__gen", "original"),
    }
    samples = {
        p.name.split("_20")[0]: [json.loads(line) for line in p.read_text().splitlines()]
        for p in lm_eval_dummy.rglob("samples_*.jsonl")
    }
    for config, k in (("original", 4), ("all_of_the_above", 5)):
        df = runs["lm-eval__dummy", config].responses
        rows = pq.read_table(mmlu_na / config / "test-00000-of-00001.parquet").to_pylist()[:N]
        assert df["id"].tolist() == [r["id"] for r in rows]
        assert df["gold"].tolist() == ["ABCDE"[r["answer"]] for r in rows]
        assert (df["n_choices"] == k).all()
        logged = sorted(samples[f"samples_{GROUP}_{config}"], key=lambda s: s["doc_id"])
        lls = np.array([[r[0] for r in s["filtered_resps"]] for s in logged], dtype=float)
        assert df["parsed"].tolist() == ["ABCDE"[i] for i in lls.argmax(axis=1)]
        assert df["correct"].tolist() == [s["acc"] == 1.0 for s in logged]  # the harness's acc
        assert np.allclose(df["confidence"], np.exp(lls.max(1)) / np.exp(lls).sum(1))
    gen = runs["lm-eval__dummy__gen", "original"]
    assert gen.summary["mode"] == "generate"
    assert gen.responses["invalid"].all() and (gen.responses["score"] == 0.0).all()


def test_unreadable_results_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "results_x.json").write_text("{not json")
    with pytest.raises(NabenchError, match=r"results_x\.json: invalid JSON at line 1"):
        read_external(tmp_path)
    (tmp_path / "results_x.json").write_text("[" * 100_000)  # issue 24: deep JSON, one line
    with pytest.raises(NabenchError, match=r"results_x\.json: nested deeper than 64"):
        read_external(tmp_path)
    (tmp_path / "results_x.json").write_text(json.dumps({"configs": {"t": {"metadata": {}}}}))
    with pytest.raises(NabenchError, match="no lm-eval results of nabench tasks"):
        read_external(tmp_path)


def test_lm_eval_results_reach_the_report_beside_a_nabench_run(
    mmlu_na: Path, lm_eval_dummy: Path, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from nabench.cli import main

    runner = CliRunner()
    ours = tmp_path / "nabench"
    res = runner.invoke(
        main,
        ["eval", str(mmlu_na), "--config", "original", "--backend", "reference",
         "--model", "always-a", "--limit", str(N), "--out", str(ours), "--quiet"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = tmp_path / "report"
    res = runner.invoke(main, ["report", str(ours), str(lm_eval_dummy), "--out", str(out),
                               "--no-plots"])  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    # the page's tables show the harness runs; its item browser reads nabench run folders only
    assert "lm-eval__dummy" in (out / "report.html").read_text("utf-8")
    rows = [r for r in report["configs"] if r["config"] == "original"]
    # the harness's loglik and generate runs are one model: the one covering more items
    # (two configs) is the panel member, the other is named
    assert sorted(r["run"] for r in rows) == ["lm-eval__dummy", "reference_always-a"]
    assert all(r["n"] == N for r in rows)
    assert report["notes"] == [
        f"model lm-eval/dummy dummy: used run lm-eval__dummy ({2 * N} answers); left out its "
        f"other run(s) lm-eval__dummy__gen ({N} answers, none valid)"
    ]


@pytest.mark.parametrize("answer", [-1, 4, True])
def test_an_lm_eval_answer_outside_the_options_is_refused(
    lm_eval_dummy: Path, tmp_path: Path, answer: object
) -> None:
    """Issue 24: an answer of -1 was scored against gold 'Z' (letters indexed from the end)."""
    import shutil

    copy = tmp_path / "logs"
    shutil.copytree(lm_eval_dummy, copy)
    samples = next(p for p in copy.rglob(f"samples_{GROUP}_original_2*.jsonl"))
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    first["doc"]["answer"] = answer
    samples.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(NabenchError, match=r"has answer .*, not an option index 0\.\.3"):
        read_external(copy)


def _inspect_log(path: Path, answers: list[int]) -> Path:
    """A real inspect `.eval` log as `nabench/mcq` writes it (written by inspect_ai itself)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    spec = EvalSpec(created="2026-01-01T00:00:00", task="nabench/mcq", dataset=EvalDataset(),
                    model="mockllm/model", config=EvalConfig())  # fmt: skip
    samples = [
        EvalSample(
            id=i,
            epoch=1,
            input="q",
            choices=["a", "b", "c", "d"],
            target="A",
            metadata={
                "nabench_id": f"mmlu/all/test/{i:05d}",
                "config": "original",
                "answer": answer,
                "subject": "anatomy",
            },
            output=ModelOutput.from_content("mockllm/model", "ANSWER: A"),
            scores={"choice": Score(value="C", answer="A")},
        )
        for i, answer in enumerate(answers)
    ]
    write_eval_log(EvalLog(status="success", eval=spec, samples=samples), str(path))
    return path


@pytest.mark.parametrize("gold", [-1, 4])
def test_an_inspect_gold_answer_outside_the_options_is_refused(tmp_path: Path, gold: int) -> None:
    """The inspect reader took `metadata["answer"]` as it came: -1 indexed the letters from
    the end and was scored against gold 'Z'. Both harness readers now share one check."""
    log = _inspect_log(tmp_path / "x.eval", [0, gold, 0])
    with pytest.raises(NabenchError, match=rf"x\.eval: sample 'mmlu/all/test/00001' has "
                       rf"answer {gold}, not an option index 0\.\.3"):  # fmt: skip
        read_external(log)
    (run,) = read_external(_inspect_log(tmp_path / "ok.eval", [0, 3, 0]))
    assert list(run.responses["gold"]) == ["A", "D", "A"]
    assert list(run.responses["correct"]) == [True, False, True]


def test_an_lm_eval_sample_logged_twice_is_refused(lm_eval_dummy: Path, tmp_path: Path) -> None:
    """A doc logged twice (an appended rerun) would be paired once and dropped once."""
    import shutil

    copy = tmp_path / "logs"
    shutil.copytree(lm_eval_dummy, copy)
    samples = next(p for p in copy.rglob(f"samples_{GROUP}_original_2*.jsonl"))
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join([*lines, lines[0]]) + "\n")
    with pytest.raises(NabenchError, match="answered more than once"):
        load_results([copy])


def test_lm_eval_runs_record_which_weights_answered(lm_eval_dummy: Path, tmp_path: Path) -> None:
    """lm-eval's own record of the weights: the Hub commit (`model_sha`) of an HF model, else
    nabench's content fingerprint of a local `pretrained=` folder; none for `dummy`."""
    assert {r.summary["model_revision"] for r in read_external(lm_eval_dummy)} == {None}
    folder = tmp_path / "ckpt" / "SmolLM2"
    folder.mkdir(parents=True)
    files = {"config.json": b"{}", "model.safetensors": b"tensors"}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    lines = "".join(f"{n}\0{hashlib.sha256(d).hexdigest()}\n" for n, d in sorted(files.items()))
    fingerprint = "sha256:" + hashlib.sha256(lines.encode()).hexdigest()
    out = tmp_path / "logs"
    shutil.copytree(lm_eval_dummy, out)
    (results,) = out.rglob("results_*.json")
    record = json.loads(results.read_text())
    record["config"]["model_args"] = {"pretrained": str(folder)}
    results.write_text(json.dumps(record))
    runs = read_external(out)
    assert {(r.summary["model"], r.summary["model_revision"]) for r in runs} == {
        ("SmolLM2", fingerprint)
    }
    record["config"]["model_sha"] = "0123abcd"  # what lm-eval's hf model writes
    results.write_text(json.dumps(record))
    assert {r.summary["model_revision"] for r in read_external(out)} == {"0123abcd"}


def _lm_eval_log(build: Path, out: Path, config: str, shift: int) -> Path:
    """An lm-eval `--log_samples` results folder for ``config`` of ``build`` (random
    log-likelihoods), the key of its first ``shift`` items moved to the next option."""
    stamp, task = "2025-01-01T00-00-00", f"{GROUP}_{config}"
    rows = pq.read_table(build / config / "test-00000-of-00001.parquet").to_pylist()
    rng = np.random.default_rng(0)
    lines = []
    for k, r in enumerate(rows):
        answer = (r["answer"] + (k < shift)) % len(r["choices"])
        doc = {"id": r["id"], "choices": r["choices"], "answer": answer, "subject": r["subject"]}
        lls = rng.normal(size=len(r["choices"]))
        lines.append({"doc": doc, "filtered_resps": [[float(x), False] for x in lls]})
    out.mkdir(parents=True)
    (out / f"samples_{task}_{stamp}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    results = {"config": {"model": "hf", "model_args": {"pretrained": "org/m"}},
               "configs": {task: {"metadata": {"nabench_config": config},
                                  "output_type": "multiple_choice"}}}  # fmt: skip
    (out / f"results_{stamp}.json").write_text(json.dumps(results))
    return out


def test_a_harness_run_with_another_key_than_the_nabench_runs_is_refused(
    mmlu_na: Path, tmp_path: Path
) -> None:
    """A harness log records no build, so its items were never checked: an lm-eval run of
    another build (30 of 60 keys differ) joined the nabench runs of this one in every table
    and the panel without a word. Runs of one config that give one id other gold answers
    answered different tests: refused in one line naming them; the same key passes."""
    from click.testing import CliRunner

    from nabench.cli import main

    runner = CliRunner()
    ours = tmp_path / "nabench"
    args = ["--config", "original", "--backend", "reference", "--model", "oracle"]
    res = runner.invoke(main, ["eval", str(mmlu_na), *args, "--out", str(ours), "--quiet"])
    assert res.exit_code == 0, res.output
    same = _lm_eval_log(mmlu_na, tmp_path / "same", "original", 0)
    other = _lm_eval_log(mmlu_na, tmp_path / "other", "original", 30)
    res = runner.invoke(main, ["report", str(ours), str(same), "--out", str(tmp_path / "a"),
                               "--no-plots"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["report", str(ours), str(other), "--out", str(tmp_path / "b"),
                               "--no-plots"])  # fmt: skip
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "config original: 30 item id(s) have other gold answers in runs" in res.output
    assert "reference_oracle" in res.output and "lm-eval__org_m" in res.output
    assert not (tmp_path / "b").exists()


def test_inspect_task_reports_each_config_not_each_variant(mmlu_na: Path, tmp_path: Path) -> None:
    """The four NA wordings are configs of one variant (`na_keyed`): the task grouped its
    accuracy by variant, so `-T config=na_keyed,na_keyed__answer_not_found` reported one
    pooled "na_keyed" number and none for the other config. Invalid answers score 0."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def answer(messages: list, *_: object) -> ModelOutput:
        lines = messages[-1].text.splitlines()  # picks "None of the above", else no letter
        na = [ln[0] for ln in lines if ln.endswith(") None of the above")]
        out = ModelOutput.from_content("mockllm/model", f"ANSWER: {na[0]}" if na else "no idea")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    configs = ("na_keyed", "na_keyed__answer_not_found")
    task = mcq(dataset=str(mmlu_na), config=",".join(configs))
    model = get_model("mockllm/model", custom_outputs=answer)
    (log,) = inspect_eval(task, model=model, display="none", log_dir=str(tmp_path))
    assert log.status == "success", log.error
    metrics = {k: m.value for k, m in log.results.scores[0].metrics.items()}
    n = pq.read_metadata(mmlu_na / configs[0] / "test-00000-of-00001.parquet").num_rows
    assert n == pq.read_metadata(mmlu_na / configs[1] / "test-00000-of-00001.parquet").num_rows
    assert (metrics["na_keyed"], metrics["na_keyed__answer_not_found"]) == (1.0, 0.0)
    assert metrics["all"] == 0.5
