"""A run killed with SIGKILL keeps what it committed; the rerun calls the model for the rest."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sigkill import kill_after_rows

pytestmark = pytest.mark.slow

N = 20

WORKER = r"""
import json, sys
from nabench.llm import ChatRequest, LocalBackend, ResponseCache, run_cached, write_stats

db, stats_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
reqs = [ChatRequest(prompt=f"Count from {i}: {i},", max_tokens=12) for i in range(n)]
backend = LocalBackend(n_ctx=512)
with ResponseCache(db) as cache:
    comps, stats = run_cached(backend, reqs, cache, namespace="resume", chunk_size=1,
                              progress=False)
write_stats(stats, stats_path)
print(json.dumps([c.text for c in comps]))
"""


def test_kill9_then_resume(tmp_path: Path, llama_cpp: Any) -> None:
    db = tmp_path / "cache.sqlite"
    stats1 = tmp_path / "stats1.json"
    cmd = [sys.executable, "-c", WORKER, str(db), str(stats1), str(N)]
    done = kill_after_rows(cmd, db, 5, timeout_s=120)
    assert not stats1.exists()
    assert 5 <= done < N, f"{done} rows: kill came too late to test resume"

    stats2 = tmp_path / "stats2.json"
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(db), str(stats2), str(N)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    texts = json.loads(out.stdout.strip().splitlines()[-1])
    stats = json.loads(stats2.read_text())
    assert len(texts) == N
    assert stats["calls"] == N - done
    assert stats["cache_hits"] == done
    con = sqlite3.connect(db)
    keys = [k for (k,) in con.execute("SELECT key FROM responses")]
    con.close()
    assert len(keys) == N == len(set(keys))
