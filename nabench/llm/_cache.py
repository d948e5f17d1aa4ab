"""On-disk response cache.

Why SQLite in WAL mode (one table, one row per response):

* **Atomic per-row commits.** Each finished chunk is one transaction; a row is either
  fully there or absent, so a `kill -9` mid-run loses only the chunk in flight and the
  rerun sends exactly the missing requests to the model.
* **Crash safety.** In WAL mode a committed transaction is in the `-wal` file before
  `commit()` returns; a killed process leaves no torn rows (with `synchronous=NORMAL`
  only an OS crash/power loss can drop the last commits, never corrupt the file).
* **Concurrent readers.** Readers never block the writer and vice versa, so a labeler, an
  evaluator and a progress monitor can open the same file; writers serialise through
  `busy_timeout`.
* **Stdlib, queryable, one file.** No server, inspectable with the `sqlite3` shell.

The key is sha256 over (model_id, request canonical JSON, namespace) and, where the backend
knows which weights answer, their revision (`Backend.revision`: a content fingerprint of
local weights): two checkpoints with one model id never read each other's answers, and a
backend without a revision keeps the keys it always had. `namespace` carries what changes
the meaning of a response without being in the request (e.g. the guideline version, the
JSON retry attempt). Errors are never stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from nabench.core.errors import NabenchError

from ._types import Backend, ChatRequest, Completion, TokenLogprob, canonical_json

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    request_json TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    logprobs_json TEXT,
    created REAL NOT NULL
)
"""


def cache_key(
    model_id: str, request: ChatRequest, namespace: str = "", revision: str | None = None
) -> str:
    """sha256 hex digest of (model_id, request canonical JSON, namespace[, revision]); without
    a revision the key is the one written before revisions existed."""
    parts = [model_id, request.canonical_json(), namespace]
    if revision is not None:
        parts.append(revision)
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def backend_keys(
    backend: Backend, requests: Iterable[ChatRequest], namespace: str = ""
) -> list[str]:
    """The cache keys of `requests` answered by `backend`: its model id and weights revision
    (read once: a fingerprint is a `stat` per call once hashed)."""
    model_id, revision = backend.model_id, backend.revision
    return [cache_key(model_id, r, namespace, revision) for r in requests]


def cache_error(path: Path, exc: BaseException) -> NabenchError:
    """One line for a cache that cannot be used: which file, what is wrong, what to do."""
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text or isinstance(exc, PermissionError):
        why = "is read-only"
    elif "not a database" in text or "malformed" in text or "no such column" in text:
        why = "is not a nabench response cache (corrupt, or another file)"
    elif "unable to open" in text or isinstance(exc, OSError):
        why = "cannot be opened or created"
    else:
        why = f"cannot be used ({type(exc).__name__}: {exc})"
    return NabenchError(
        f"response cache {path} {why}: move it away, or pass --cache (or set NABENCH_CACHE) "
        "to a writable file"
    )


class ResponseCache:
    """SQLite (WAL) store of successful completions, keyed by `cache_key`."""

    def __init__(self, path: str | Path, *, timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            self._conn.execute(_SCHEMA)
            self._conn.execute("SELECT key FROM responses LIMIT 1").fetchall()
        except (sqlite3.Error, OSError) as exc:
            raise cache_error(self.path, exc) from None

    key = staticmethod(cache_key)
    backend_keys = staticmethod(backend_keys)

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        """The cached completions for those of `keys` that are present."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, Completion] = {}
        step = 500  # stay under SQLite's bound-parameter limit
        for i in range(0, len(keys), step):
            part = keys[i : i + step]
            marks = ",".join("?" * len(part))
            rows = self._conn.execute(
                "SELECT key, text, finish_reason, logprobs_json FROM responses "
                f"WHERE key IN ({marks})",
                part,
            )
            for key, text, finish_reason, logprobs_json in rows:
                logprobs = (
                    None
                    if logprobs_json is None
                    else tuple(TokenLogprob.from_json(t) for t in json.loads(logprobs_json))
                )
                out[key] = Completion(
                    text=text, finish_reason=finish_reason, logprobs=logprobs, cached=True
                )
        return out

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def put_many(self, rows: Sequence[tuple[str, str, ChatRequest, Completion]]) -> int:
        """Store (key, model_id, request, completion) rows in one transaction.

        Completions with an error are skipped. Returns the number of rows written.
        """
        good = [
            (
                key,
                model_id,
                req.canonical_json(),
                comp.text,
                comp.finish_reason,
                comp.logprobs_json(),
                time.time(),
            )
            for key, model_id, req, comp in rows
            if comp.error is None
        ]
        if not good:
            return 0
        try:
            with self._conn:  # BEGIN ... COMMIT (ROLLBACK on exception)
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses "
                    "(key, model_id, request_json, text, finish_reason, logprobs_json, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    good,
                )
        except sqlite3.Error as exc:
            raise cache_error(self.path, exc) from None
        return len(good)

    def put_records(self, rows: Sequence[tuple[str, str, str, str, str | None, str | None]]) -> int:
        """Store already-serialised rows (key, model_id, request_json, text, finish_reason,
        logprobs_json), e.g. the result shards of a Ray run, in one transaction."""
        if not rows:
            return 0
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "INSERT OR REPLACE INTO responses "
                "(key, model_id, request_json, text, finish_reason, logprobs_json, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(*row, time.time()) for row in rows],
            )
        return len(rows)

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, key: object) -> bool:
        row = self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
        return row is not None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
