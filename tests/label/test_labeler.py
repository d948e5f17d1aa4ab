"""Labeling with the real SmolLM2 model (local backend, and a real llama.cpp server through the
OpenAI backend). The model labels at chance: these tests check mechanics, never answers. The
kill -9 test kills a real labeling process answered by a scripted server (its subject is the
cache's bookkeeping)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.scripted import Scripted, chat_body
from sigkill import kill_after_rows

from nabench.label import LabelRecord, label_items, load_guideline
from nabench.label.records import label_pandera_schema
from nabench.llm import ResponseCache
from nabench.llm.options import open_backend
from nabench.schemas.model import ModelSpec
from nabench.sources import get_source

# Real model / git + server runs (the fast loop is `pytest -m "not slow"`).
pytestmark = pytest.mark.slow

N_ITEMS = 4  # real model calls: enough for mechanics, small for CI time
N_KILLED = 10  # the kill -9 test (scripted answers): room for a kill mid-run


@pytest.fixture(scope="module")
def items(mmlu_dir: Path) -> pa.Table:
    # N_ITEMS real MMLU items from across the subjects.
    table = get_source("mmlu").load("test", location=str(mmlu_dir)).items
    return table.take([k * (14000 // N_ITEMS) for k in range(N_ITEMS)])


def _check_records(table: pa.Table, n: int) -> None:
    assert table.num_rows == n
    frame = table.to_pandas(
        types_mapper=lambda t: {
            pa.bool_(): __import__("pandas").BooleanDtype(),
            pa.int64(): __import__("pandas").Int64Dtype(),
        }.get(t)
    )
    label_pandera_schema().validate(frame)
    for row in table.to_pylist():
        record = LabelRecord.model_validate(row)
        if record.valid:
            assert record.na_applicable is not None
            parsed = json.loads(record.raw_output)
            assert parsed["na_applicable"] == record.na_applicable
        else:
            assert record.na_applicable is None and record.rule is None
        assert 1 <= record.attempts <= 2


def _run(items: pa.Table, backend: Any, cache: ResponseCache) -> Any:
    return label_items(
        items,
        backend,
        cache,
        load_guideline(),
        max_attempts=2,
        max_tokens=96,
        chunk_size=8,
        progress=False,
    )


def test_local_backend_labels_are_schema_valid_and_cached(
    items: pa.Table, local_backend: Any, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = _run(items, local_backend, cache)
    _check_records(first.table, N_ITEMS)
    assert first.stats["calls"] >= N_ITEMS and first.stats["cache_hits"] == 0
    assert first.table.column("model")[0].as_py() == local_backend.model_id
    again = _run(items, local_backend, cache)
    assert again.stats["calls"] == 0
    assert again.table.equals(first.table)


def test_openai_backend_against_llama_server(
    items: pa.Table, llama_server: str, tmp_path: Path
) -> None:
    backend = open_backend(
        ModelSpec(
            backend="openai",
            base_url=llama_server,
            concurrency=4,
            options={"json_mode": "json_object", "model_id": "smollm2-server"},
        )
    )
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = _run(items, backend, cache)
    _check_records(first.table, N_ITEMS)
    assert set(first.table.column("backend").to_pylist()) == {"openai"}
    again = _run(items, backend, cache)
    assert again.stats["calls"] == 0 and again.stats["cache_hits"] >= N_ITEMS


def test_sigkill_mid_run_loses_nothing_and_rerun_calls_only_the_missing(
    mmlu_dir: Path, tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    """The cache's resume bookkeeping: a real `nabench label` process killed with SIGKILL
    mid-run, answered by a scripted labeler on loopback (0.3 s an answer, so the kill lands
    mid-run; the real model's labels are the two tests above)."""
    verdict = {"na_applicable": True, "rule": "none", "rationale": "scripted"}
    server = scripted_server(lambda *_: (200, chat_body(json.dumps(verdict))), delay_s=0.3)
    cache = tmp_path / "c.sqlite"
    out = tmp_path / "labels.parquet"
    cmd = [
        sys.executable, "-m", "nabench.cli", "label", "mmlu-na",
        "--source", str(mmlu_dir), "--limit", str(N_KILLED),
        "--backend", "openai", "--base-url", server.url, "--concurrency", "1",
        "--max-attempts", "1", "--max-tokens", "48", "--chunk-size", "2",
        "--cache", str(cache), "--out", str(out), "--quiet",
    ]  # fmt: skip
    done = kill_after_rows(cmd, cache, 4, timeout_s=600, env={"PYTHONUNBUFFERED": "1"})
    assert 4 <= done < N_KILLED and not out.exists()

    rerun = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "calls=" in rerun.stdout
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["calls"] == N_KILLED - done
    assert summary["cache_hits"] == done
    ids = pq.read_table(out).column("id").to_pylist()
    assert len(ids) == N_KILLED == len(set(ids))
