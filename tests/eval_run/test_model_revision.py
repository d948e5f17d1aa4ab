"""A panel member is a model — backend, model id and weights revision: `nabench eval` records
which weights answered (`model_revision`) in run.json and every summary, so two checkpoints
saved under one file name are two runs and two models, never one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.scripted import chat_body
from testdeps import require

from nabench.cli import main as nabench_main
from nabench.evaluation.producers import ModelProducer
from nabench.evaluation.results import load_results
from nabench.evaluation.run_identity import RUN_FILE, resolve_run_dir, write_settings
from nabench.evaluation.runner import EvalOptions, run_settings
from nabench.llm import LocalBackend, ResponseCache, smollm2_gguf_path
from nabench.schemas.model import ModelSpec


def _invoke(args: list[str], ok: bool = True) -> str:
    result = CliRunner().invoke(nabench_main, args)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("mmlu20") / "mmlu-na"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "20"]
    _invoke([*args, "--out", str(out), "--quiet"])
    return out


def _settings(gguf: Path, cache: ResponseCache) -> dict[str, Any]:
    options = EvalOptions(dataset="org/mmlu-na", spec=ModelSpec(model=str(gguf)))
    producer = ModelProducer(LocalBackend(gguf), cache)
    return run_settings(options, producer, "in-process")


def test_two_local_checkpoints_with_one_file_name_are_two_runs(tmp_path: Path) -> None:
    weights = {"a": b"weights after step 1000", "b": b"weights after step 2000"}
    ggufs = {}
    for name, data in weights.items():
        (tmp_path / name).mkdir()
        ggufs[name] = tmp_path / name / "model.gguf"
        ggufs[name].write_bytes(data)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        a, b = (_settings(ggufs[n], cache) for n in "ab")
    for name, settings in (("a", a), ("b", b)):
        assert settings["model"] == "model"
        assert settings["model_revision"] == "sha256:" + hashlib.sha256(weights[name]).hexdigest()
        assert str(tmp_path) not in json.dumps(settings)  # a hash, never the folder
    out = tmp_path / "res"
    write_settings(out / "model", a)
    assert resolve_run_dir(out, None, "model", a) == out / "model"  # same weights: reused
    assert resolve_run_dir(out, None, "model", b) == out / "model__local"  # other weights
    with pytest.raises(Exception, match="model_revision: 'sha256:"):
        resolve_run_dir(out, "model", "model", b)
    # a folder written before revisions were recorded may hold other weights' answers
    legacy = {k: v for k, v in a.items() if k != "model_revision"}
    write_settings(out / "old", legacy)
    with pytest.raises(Exception, match=r"model_revision: None → 'sha256:"):
        resolve_run_dir(out, "old", "model", a)


def test_eval_records_the_declared_revision_and_the_report_counts_two_models(
    built: Path, tmp_path: Path, scripted_server: Any
) -> None:
    server = scripted_server(lambda _path, _body, _n: (200, chat_body("Answer: A")))
    out, cache = tmp_path / "res", tmp_path / "c.sqlite"
    common = ["eval", str(built), "--backend", "openai", "--base-url", server.url,
              "--model", "ckpt", "--config", "original", "--config", "na_keyed",
              "--limit", "6", "--out", str(out), "--cache", str(cache), "--quiet"]  # fmt: skip
    _invoke([*common, "--option", "revision=step-1000"])
    _invoke([*common, "--option", "revision=step-2000"])
    _invoke(common)  # nothing declared: no revision recorded
    # each checkpoint was asked itself (12 requests each), none answered from another's cache
    assert len(server.posts) == 3 * 12
    runs = {p.name: p for p in out.iterdir()}
    assert sorted(runs) == ["ckpt", "ckpt__openai", "ckpt__openai-2"]
    revisions = {}
    for name, run in runs.items():
        settings = json.loads((run / RUN_FILE).read_text())["settings"]
        for config in ("original", "na_keyed"):
            summary = json.loads((run / f"{config}.summary.json").read_text())
            assert summary["model_revision"] == settings.get("model_revision")
        revisions[name] = settings.get("model_revision")
    assert revisions == {"ckpt": "step-1000", "ckpt__openai": "step-2000", "ckpt__openai-2": None}
    results = load_results([out])
    identity = results.model_identity()
    assert identity == {
        "ckpt": ("openai", "ckpt", "step-1000"),
        "ckpt__openai": ("openai", "ckpt", "step-2000"),
        "ckpt__openai-2": ("openai", "ckpt", ""),
    }
    # three models with equal answers: none is a copy of another, so none is refused
    printed = _invoke(["report", str(out), "--out", str(tmp_path / "rep"), "--no-plots"])
    assert "3 run(s)" in printed
    assert "left out its other run" not in (tmp_path / "rep" / "report.md").read_text()


@pytest.mark.slow
def test_a_real_local_run_records_the_gguf_fingerprint(built: Path, tmp_path: Path) -> None:
    """The real SmolLM2 GGUF, two items, four tokens: run.json and every summary carry the
    file's SHA-256 (what `sha256sum` prints), and no absolute path of it."""
    require("llama_cpp", "pip install 'nabench[llm]'")
    gguf = smollm2_gguf_path()
    expected = "sha256:" + hashlib.sha256(gguf.read_bytes()).hexdigest()
    out = tmp_path / "res"
    _invoke(["eval", str(built), "--backend", "local", "--config", "original", "--limit", "2",
             "--max-tokens", "4", "--option", "n_threads=1", "--out", str(out),
             "--cache", str(tmp_path / "c.sqlite"), "--quiet"])  # fmt: skip
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    record = (run / RUN_FILE).read_text()
    assert json.loads(record)["settings"]["model_revision"] == expected
    summary = (run / "original.summary.json").read_text()
    assert json.loads(summary)["model_revision"] == expected
    assert json.loads(summary)["calls"] == 2
    for text in (record, summary):
        assert str(gguf.parent) not in text
