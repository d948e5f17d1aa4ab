"""Shared scaffolding of the kill -9 tests: run a command, SIGKILL it once its response cache
has committed enough rows, and report how many rows survived."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def cache_rows(db: Path) -> int:
    """Rows committed to a response cache (0 before the file or its table exists)."""
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=5)
    try:
        return int(con.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        con.close()


def kill_after_rows(
    cmd: Sequence[str],
    db: Path,
    rows: int,
    *,
    timeout_s: float = 600,
    env: Mapping[str, str] | None = None,
) -> int:
    """Start `cmd`, SIGKILL it as soon as `db` holds `rows` rows; returns the rows kept.

    Fails the test if the command exits on its own first or makes no progress in time.
    """
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + timeout_s
    try:
        while cache_rows(db) < rows:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"command ended before it could be killed:\n{err}")
            assert time.monotonic() < deadline, "command made no progress"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return cache_rows(db)
