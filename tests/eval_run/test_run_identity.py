"""Run identity: --run-name, no silent overwrite, refused configs, a cache key that holds
the backend and its endpoint (a real llama.cpp server after a local run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nabench.cli import main as nabench_main
from nabench.cli.evaluation import eval_cmd
from nabench.core.errors import NabenchError
from nabench.evaluation.run_identity import RUN_FILE, resolve_run_dir, write_settings


def _invoke(cmd: Any, args: list[str], ok: bool = True) -> str:
    if cmd is eval_cmd:  # through the group: errors are printed as one line
        cmd, args = nabench_main, ["eval", *args]
    result = CliRunner().invoke(cmd, args)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("mmlu20") / "mmlu-na"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "20"]
    _invoke(nabench_main, [*args, "--out", str(out), "--quiet"])
    return out


def test_resolve_run_dir(tmp_path: Path) -> None:
    a = {"model": "m", "backend": "local", "limit": 5}
    write_settings(tmp_path / "m", a)
    assert resolve_run_dir(tmp_path, None, "m", a) == tmp_path / "m"  # same settings: reuse
    b = {**a, "backend": "openai"}
    assert resolve_run_dir(tmp_path, None, "m", b) == tmp_path / "m__openai"
    write_settings(tmp_path / "m__openai", {**b, "limit": 9})
    assert resolve_run_dir(tmp_path, None, "m", b) == tmp_path / "m__openai-2"
    with pytest.raises(Exception, match=r"other settings \(backend: 'local' → 'openai'\)"):
        resolve_run_dir(tmp_path, "m", "m", b)
    with pytest.raises(Exception, match="--run-name"):
        resolve_run_dir(tmp_path, "../x", "m", a)


def test_second_run_with_other_settings_is_refused_or_renamed(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    base = [str(built), "--backend", "reference", "--model", "oracle", "--out", str(out),
            "--config", "original"]  # fmt: skip
    _invoke(eval_cmd, [*base, "--run-name", "o", "--limit", "5"])
    first = (out / "o" / "original.parquet").read_bytes()
    msg = _invoke(eval_cmd, [*base, "--run-name", "o", "--limit", "7"], ok=False)
    assert "holds a run with other settings (limit: 5 → 7)" in msg
    assert (out / "o" / "original.parquet").read_bytes() == first  # untouched
    _invoke(eval_cmd, [*base, "--run-name", "o", "--limit", "5"])  # same settings: fine
    printed = _invoke(eval_cmd, [*base, "--limit", "5"])
    assert f"wrote {out / 'reference_oracle'}" in printed
    printed = _invoke(eval_cmd, [*base, "--limit", "6"])
    assert f"wrote {out / 'reference_oracle__reference'}" in printed
    settings = json.loads((out / "reference_oracle__reference" / RUN_FILE).read_text())
    assert settings["settings"]["limit"] == 6
    assert (out / "o" / "original.parquet").stat().st_mode & 0o777 == 0o644


def test_a_damaged_run_record_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / RUN_FILE).write_text("{not json")
    with pytest.raises(NabenchError, match=r"run\.json: invalid JSON"):
        resolve_run_dir(tmp_path, "m", "m", {"model": "m"})
    (tmp_path / "m" / RUN_FILE).write_text("[]")
    with pytest.raises(NabenchError, match="not a run record"):
        resolve_run_dir(tmp_path, "m", "m", {"model": "m"})


def test_run_json_records_the_engine_outside_the_identity(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    base = [str(built), "--backend", "reference", "--model", "oracle", "--out", str(out),
            "--config", "original", "--limit", "3", "--run-name", "o"]  # fmt: skip
    _invoke(eval_cmd, base)
    record = json.loads((out / "o" / RUN_FILE).read_text())
    assert record["engine"] == {"engine": "local"}
    assert "engine" not in record["settings"]
    # a reference strategy calls no model: another engine is refused, not ignored
    msg = _invoke(eval_cmd, [*base, "--engine", "ray"], ok=False)
    assert "--engine local" in msg and "Traceback" not in msg


@pytest.mark.parametrize("config", ["excluded", "labels"])
def test_eval_refuses_non_item_configs(built: Path, tmp_path: Path, config: str) -> None:
    args = [str(built), "--backend", "reference", "--model", "oracle", "--config", config,
            "--out", str(tmp_path)]  # fmt: skip
    msg = _invoke(eval_cmd, args, ok=False)
    assert "hold no evaluation items" in msg and "Traceback" not in msg


@pytest.mark.slow
def test_openai_run_after_local_run_makes_real_calls(
    built: Path, tmp_path: Path, llama_server: str
) -> None:
    """The server serves the same GGUF under the same model id as the local backend: the
    openai run must not be answered from the local run's cache, and must get its own run."""
    out, cache = tmp_path / "res", tmp_path / "cache.sqlite"
    common = [str(built), "--config", "original", "--limit", "3", "--max-tokens", "8",
              "--out", str(out), "--cache", str(cache), "--quiet"]  # fmt: skip
    _invoke(eval_cmd, [*common, "--backend", "local"])
    (local_dir,) = [p for p in out.iterdir() if p.is_dir()]
    local = json.loads((local_dir / "original.summary.json").read_text())
    assert local["calls"] == 3
    url = llama_server
    printed = _invoke(eval_cmd, [*common, "--backend", "openai", "--base-url", url])
    runs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert runs == [local_dir.name, f"{local_dir.name}__openai"]
    served = json.loads((out / runs[1] / "original.summary.json").read_text())
    assert served["model"] == local["model"]  # same id: only backend + endpoint differ
    assert served["calls"] == 3 and served["cache_hits"] == 0, printed
    assert served["backend"] == "openai" and served["endpoint"] == url
    again = json.loads((local_dir / "original.summary.json").read_text())
    assert again == local  # the local run's folder was not touched
