"""`--engine ray`: labeling through Ray Data LLM's HTTP processor on a 2-CPU cluster (the
session's, joined with `--ray-address`, or one the command starts itself).

What is checked is what a researcher relies on: the labels equal the in-process engine's for
the same model and requests, against two real llama.cpp servers (SmolLM2) on loopback; a
re-run makes no model call; a driver killed with SIGKILL keeps every finished block and the
re-run sends only the rest; a server stopped mid-run does not crash the job (its requests go
to the other server, or end as invalid rows with the error). The kill and the outage are the
Ray engine's bookkeeping, not the model's: they run against scripted OpenAI-compatible
servers on loopback (tests/fixtures/scripted.py), paced so the kill lands mid-run, and the
driver killed is still a real process with its real local cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fixtures.scripted import Scripted, chat_body, start_scripted_server

from nabench.label.guideline import load_guideline
from nabench.llm import local_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LIMIT = 14
LABEL_COLUMNS = ["id", "na_applicable", "rule", "rationale", "raw_output", "valid", "attempts"]


@pytest.fixture(scope="module")
def endpoints() -> Iterator[tuple[str, str]]:
    # One thread each: on two cores the two servers then get a core each.
    with local_server(n_threads=1) as first, local_server(n_threads=1) as second:
        yield first, second


def _label_cmd(
    mmlu_dir: Path, out: Path, cache: Path, url: str, *extra: str, limit: int = LIMIT
) -> list[str]:
    return [
        sys.executable, "-m", "nabench.cli", "label", "mmlu-na",
        "--source", str(mmlu_dir), "--limit", str(limit), "--quiet",
        "--backend", "openai", "--base-url", url, "--max-tokens", "96",
        "--out", str(out), "--cache", str(cache), *extra,
    ]  # fmt: skip


def _ray_flags(*urls: str, batch: int = 4) -> list[str]:
    return [
        "--engine", "ray",
        "--option", f"ray.endpoints=[{','.join(urls)}]",
        "--option", f"ray.batch_size={batch}",
        "--option", "ray.num_cpus=2",
    ]  # fmt: skip


def _run(cmd: list[str]) -> dict[str, Any]:
    env = {**os.environ, "RAY_DEDUP_LOGS": "0", "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = Path(cmd[cmd.index("--out") + 1])
    summary: dict[str, Any] = json.loads(out.with_suffix(".summary.json").read_text())
    return summary


def _labels(path: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(path, columns=LABEL_COLUMNS).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def test_ray_labels_equal_local_and_rerun_is_free(
    endpoints: tuple[str, str], ray_address: str, mmlu_dir: Path, tmp_path: Path
) -> None:
    # 8 items: two Ray batches of 4, one per server. The Ray runs join the session's
    # cluster (`--ray-address`); the kill test below starts the driver's own.
    first, second = endpoints
    local_out, ray_out = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    local = _run(_label_cmd(mmlu_dir, local_out, tmp_path / "local.sqlite", first, limit=8))
    ray_flags = [*_ray_flags(first, second), "--ray-address", ray_address]
    ray_cmd = _label_cmd(mmlu_dir, ray_out, tmp_path / "ray.sqlite", first, *ray_flags, limit=8)
    ray = _run(ray_cmd)
    assert local["n"] == ray["n"] == 8  # the first 8 MMLU test items are all eligible
    assert ray["calls"] >= ray["n"] and ray["cache_hits"] == 0
    assert ray["engine"]["engine"] == "ray" and ray["engine"]["ray"]["endpoints"] == 2
    assert local["engine"] == {"engine": "local"}
    assert _labels(ray_out) == _labels(local_out)  # content, row for row

    again = _run(ray_cmd)
    assert again["calls"] == 0 and again["cache_hits"] >= again["n"]
    assert _labels(ray_out) == _labels(local_out)
    # Nothing in a written file names an endpoint or a key.
    for path in tmp_path.glob("ray*.json"):
        assert "127.0.0.1" not in path.read_text()


def _label_respond() -> Callable[[str, dict[str, Any], int], tuple[int, Any]]:
    """A scripted labeler: a valid verdict fixed by the item's text."""
    rule = load_guideline().rule_ids[0]

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        applicable = zlib.crc32(body["messages"][-1]["content"].encode()) % 2 == 0
        verdict = {"na_applicable": applicable, "rule": "none" if applicable else rule}
        return 200, chat_body(json.dumps({**verdict, "rationale": "scripted"}))

    return respond


def _shard_rows(root: Path) -> int:
    total = 0
    for path in root.glob("*/*.parquet"):
        try:
            total += pq.read_metadata(path).num_rows
        except Exception:  # being written
            continue
    return total


def test_sigkill_of_the_driver_keeps_finished_blocks(
    scripted_server: Callable[..., Scripted], mmlu_dir: Path, tmp_path: Path
) -> None:
    # each answer takes 1 s, so blocks finish one by one and the kill lands mid-run
    first, second = (scripted_server(_label_respond(), delay_s=1.0).url for _ in range(2))
    cache = tmp_path / "cache.sqlite"
    shards = tmp_path / "cache.sqlite.ray-shards"
    out = tmp_path / "labels.parquet"
    cmd = _label_cmd(mmlu_dir, out, cache, first, *_ray_flags(first, second, batch=2), limit=12)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    deadline = time.monotonic() + 600
    try:
        while _shard_rows(shards) < 4:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "no block finished in time"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local cluster it started
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    kept = _shard_rows(shards)
    assert kept >= 4 and not out.exists()

    rerun = _run(cmd)
    assert rerun["n"] >= 10
    # the first JSON attempt of every finished block came from the shards, not the model
    assert rerun["cache_hits"] >= kept
    assert rerun["engine"]["recovered"] >= kept
    ids = [r["id"] for r in _labels(out)]
    assert len(ids) == len(set(ids)) == rerun["n"]
    assert not any(shards.glob("*/*.parquet"))  # merged, then removed


def test_a_server_stopped_mid_run_does_not_crash_the_job(
    scripted_server: Callable[..., Scripted], mmlu_dir: Path, tmp_path: Path
) -> None:
    """One of two servers stops after answering 2 of its requests (the third has its
    connection dropped, then the server closes): the job still ends with every item, the
    lost requests answered by the other server in a later pass or kept as invalid rows."""
    first = scripted_server(_label_respond(), delay_s=0.5).url
    answer, stopped = _label_respond(), threading.Event()

    def stop() -> None:
        doomed_srv.shutdown()  # no more answers, and new connections are refused
        doomed_srv.server_close()

    def doomed_respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        if n >= 2:  # its third request: the server stops mid-run
            if not stopped.is_set():
                stopped.set()
                threading.Thread(target=stop, daemon=True).start()
            raise ConnectionAbortedError("the server was stopped")
        return answer(path, body, n)

    doomed, doomed_srv = start_scripted_server(doomed_respond, delay_s=0.5)
    summary = _run(
        _label_cmd(
            mmlu_dir,
            tmp_path / "labels.parquet",
            tmp_path / "cache.sqlite",
            first,
            *_ray_flags(first, doomed.url, batch=2),
            limit=12,
        )
    )
    assert stopped.is_set() and len(doomed.posts) >= 3
    rows = _labels(tmp_path / "labels.parquet")
    assert len({r["id"] for r in rows}) == len(rows) == summary["n"] >= 10
    engine = summary["engine"]
    # the outage hit the job: what the stopped server lost went to the other server in a
    # later pass, or ended as invalid rows with the error; nothing crashed, nothing is missing
    assert engine["passes"] >= 2 or summary["errors"] > 0, summary
    assert engine["failed_requests"] <= summary["invalid"] + summary["errors"]
