"""Every model job takes `--engine ray` through the one `open_backend(spec)`: eval, selfknow
generate/classify, na-train sampling and question inference, on one shared Ray cluster
against a llama.cpp server (SmolLM2) on loopback. (Labeling: test_ray_engine.py.)

Eval runs each engine on its own cache and compares the raw outputs (greedy decoding).
The others run on Ray first, then locally on the same cache: the local run makes no model
call and writes the same rows, so Ray answered exactly the requests the local engine asks.
That Ray dispatched at all is read from the shard folder it leaves beside the cache.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from fixtures.scripted import Scripted, chat_body

from nabench.cli import main

pytestmark = pytest.mark.slow


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _ray(address: str) -> list[str]:
    # ray.qps: an engine option, which once reached the backend constructor (TypeError)
    return ["--engine", "ray", "--ray-address", address, "--option", "ray.batch_size=4",
            "--option", "ray.qps=50"]  # fmt: skip


def _ray_dispatched(cache: Path) -> bool:
    return cache.with_name(cache.name + ".ray-shards").is_dir()


def _rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def _stats(path: Path) -> dict[str, Any]:
    stats: dict[str, Any] = json.loads(path.with_suffix(".stats.json").read_text())
    return stats


@pytest.fixture(scope="module")
def mmlu_na(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("mmlu6") / "mmlu-na"
    _invoke(["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none",
             "--limit", "6", "--out", str(out), "--quiet"])  # fmt: skip
    return out


def test_eval_on_ray_gives_the_local_outputs_and_records_the_engine(
    mmlu_na: Path, server: str, ray_address: str, tmp_path: Path
) -> None:
    outputs = {}
    for engine in ("local", "ray"):
        cache, out = tmp_path / f"{engine}.sqlite", tmp_path / engine
        args = ["eval", str(mmlu_na), "--config", "original", "--limit", "4",
                "--backend", "openai", "--base-url", server, "--max-tokens", "24",
                "--cache", str(cache), "--out", str(out), "--run-name", "r", "--quiet"]  # fmt: skip
        _invoke([*args, *(_ray(ray_address) if engine == "ray" else [])])
        run = json.loads((out / "r" / "run.json").read_text())
        assert run["engine"]["engine"] == engine
        assert _ray_dispatched(cache) == (engine == "ray")
        outputs[engine] = [r["raw_output"] for r in _rows(out / "r" / "original.parquet")]
    assert len(outputs["local"]) == 4
    assert outputs["ray"] == outputs["local"]


def test_ray_sends_the_key_the_local_engine_sends_and_prints_it_nowhere(
    mmlu_na: Path,
    ray_address: str,
    scripted_server: Callable[..., Scripted],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A keyed endpoint sees the same `Authorization` header from both engines (Ray sent
    none, so a hosted API refused every request); a server quoting the key in its error
    body (401) gets it masked in what either engine prints and stores."""
    key = "sk-RAYKEY-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    answers = scripted_server(lambda _p, _b, _n: (200, chat_body("Answer: A")))
    echoes = scripted_server(
        lambda _p, _b, _n: (401, {"error": {"message": f"Received API Key = {key}"}})
    )
    ray = [*_ray(ray_address), "--option", "ray.passes=1", "--option", "ray.max_retries=0"]
    for engine in ("local", "ray"):
        for name, server in (("answers", answers), ("echoes", echoes)):
            out = tmp_path / f"{engine}-{name}"
            args = ["eval", str(mmlu_na), "--config", "original", "--limit", "2",
                    "--backend", "openai", "--base-url", server.url, "--model", "m",
                    "--option", "max_retries=0", "--cache", f"{out}.sqlite",
                    "--out", str(out), "--run-name", "r", "--quiet"]  # fmt: skip
            result = CliRunner().invoke(main, [*args, *(ray if engine == "ray" else [])])
            assert key not in result.output
            assert (name == "echoes") == ("***" in result.output), result.output
            stored = [p for p in tmp_path.rglob("*") if p.is_file()]
            assert not [p for p in stored if key.encode() in p.read_bytes()]
        assert set(answers.authorization) == set(echoes.authorization) == {f"Bearer {key}"}
    assert len(answers.posts) == 4  # two items, each engine


def test_selfknow_generate_and_classify_on_ray(
    server: str, ray_address: str, tmp_path: Path
) -> None:
    cache = tmp_path / "c.sqlite"
    common = ["--backend", "openai", "--base-url", server, "--max-tokens", "64",
              "--cache", str(cache), "--quiet"]  # fmt: skip
    generate = ["selfknow", "generate", *common, "--n-per-class", "1", "--style", "vanilla",
                "--seed", "3", "--max-task-chars", "160"]  # fmt: skip
    _invoke([*generate, *_ray(ray_address), "--out", str(tmp_path / "ray.parquet")])
    assert _ray_dispatched(cache)
    _invoke([*generate, "--out", str(tmp_path / "local.parquet")])
    assert _stats(tmp_path / "local.parquet")["calls"] == 0
    assert _rows(tmp_path / "ray.parquet") == _rows(tmp_path / "local.parquet")

    tasks = str(tmp_path / "local.parquet")
    classify = ["selfknow", "classify", tasks, *common, "--max-answer-chars", "100"]
    _invoke([*classify, *_ray(ray_address), "--out", str(tmp_path / "ray-v.parquet")])
    _invoke([*classify, "--out", str(tmp_path / "local-v.parquet")])
    assert _stats(tmp_path / "local-v.parquet")["calls"] == 0
    assert _rows(tmp_path / "ray-v.parquet") == _rows(tmp_path / "local-v.parquet")


def test_na_train_sampling_on_ray(
    mmlu_dir: Path, server: str, ray_address: str, tmp_path: Path
) -> None:
    cache = tmp_path / "c.sqlite"
    build = ["build", "mmlu-na-train", "--source", str(mmlu_dir), "--split", "validation",
             "--limit", "4", "--labels", "none", "--cache", str(cache), "--quiet", "--yes",
             "--set", "sampler.n=2", "--set", "sampler.max_tokens=8",
             "--set", "sampler.backend=openai", "--set", f"sampler.base_url={server}"]  # fmt: skip
    engine = ["--set", "sampler.engine=ray", "--set", f"sampler.ray={{address: '{ray_address}'}}"]
    _invoke([*build, *engine, "--out", str(tmp_path / "ray")])
    assert _ray_dispatched(cache)
    manifest = json.loads((tmp_path / "ray" / "build.json").read_text())
    assert manifest["model"]["engine"] == "ray"
    _invoke([*build, "--out", str(tmp_path / "local")])
    samples = "samples/train-00000-of-00001.parquet"
    assert _rows(tmp_path / "ray" / samples) == _rows(tmp_path / "local" / samples)
    assert json.loads((tmp_path / "local.stats.json").read_text())["calls"] == 0


def test_question_inference_on_ray(
    mmlu_dir: Path, server: str, ray_address: str, tmp_path: Path
) -> None:
    built, cache = tmp_path / "mmlu-artifacts", tmp_path / "c.sqlite"
    _invoke(["build", "mmlu-artifacts", "--source", str(mmlu_dir), "--limit", "40",
             "--out", str(built), "--quiet"])  # fmt: skip
    infer = ["artifacts", "infer-questions", str(built), "--backend", "openai",
             "--base-url", server, "--limit", "4", "--max-tokens", "24", "--cache", str(cache),
             "--quiet"]  # fmt: skip
    _invoke([*infer, *_ray(ray_address), "--out", str(tmp_path / "ray")])
    assert _ray_dispatched(cache)
    local = _invoke([*infer, "--out", str(tmp_path / "local")])
    assert re.search(r"\b0 call\(s\)", local), local
    outputs = "qi_step1_outputs/test-00000-of-00001.parquet"
    assert _rows(tmp_path / "ray" / outputs) == _rows(tmp_path / "local" / outputs)
