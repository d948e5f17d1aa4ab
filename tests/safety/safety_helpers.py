"""Helpers of the safety tests: run the real CLI, snapshot a folder's bytes, tiny HTTP servers
on 127.0.0.1 that answer like a broken model server or Hub (imported by name)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def errors(self) -> list[str]:
        """stderr lines that are nabench's error lines (progress bars filtered out)."""
        return [ln for ln in self.stderr.splitlines() if ln.startswith(("error:", "Error:"))]


def nabench(*args: str, env: Mapping[str, str | None] | None = None) -> Run:
    """The real `nabench` command in this process (click's runner: exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from nabench.cli import main

    result = CliRunner().invoke(main, list(args), env=dict(env or {}), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def nabench_process(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: int = 600,
) -> Run:
    """`python -m nabench.cli ARGS` in a subprocess: for settings read at import time
    (HF_ENDPOINT, HF_HUB_OFFLINE) and for a working directory of its own."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "nabench.cli", *args],
        cwd=cwd,
        env={k: v for k, v in full_env.items() if v is not None},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def tree_bytes(root: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every file under `root`."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def hidden(parent: Path) -> list[str]:
    """Dot-entries in `parent` (temp folders, locks) a build may have left behind."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def copy_source(mmlu_dir: Path, dest: Path, edit: Callable[[pa.Table], pa.Table]) -> Path:
    """A copy of the real MMLU source folder (card + parquet) with every split edited."""
    (dest / "all").mkdir(parents=True)
    (dest / "README.md").write_bytes((mmlu_dir / "README.md").read_bytes())
    for path in sorted((mmlu_dir / "all").glob("*.parquet")):
        pq.write_table(edit(pq.read_table(path)), dest / "all" / path.name)
    return dest


def copy_arc_source(
    arc_dir: Path, dest: Path, edit: Callable[[list[dict[str, object]]], None]
) -> Path:
    """A copy of the real ARC-Challenge source folder with the rows of its test split edited
    in place by `edit` (the other splits copied as they are)."""
    shutil.copytree(arc_dir, dest)
    path = dest / "ARC-Challenge" / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    edit(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return dest


Handler = Callable[[str, str, bytes], tuple[int, dict[str, object] | str]]


@contextmanager
def http_server(answer: Handler) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1; `answer(method, path, body)` -> (status, JSON or text).
    Yields its base URL."""

    class _Handler(BaseHTTPRequestHandler):
        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            status, payload = answer(method, self.path, self.rfile.read(length))
            body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._reply("GET")

        def do_POST(self) -> None:
            self._reply("POST")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_recipe(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def llm_recipe(base_url: str, *, name: str = "safety-na", extra: str = "") -> str:
    """An NA recipe labeled by an OpenAI-compatible server at `base_url` (no client retries,
    so a dead server fails in well under a second per request)."""
    return f"""\
name: {name}
version: 1.0.0
kind: na
source: {{dataset: mmlu, splits: [test]}}
seed: 7
variants:
  - kind: original
  - kind: na_keyed
labels:
  mode: llm
  llm:
    backend: openai
    model: tiny
    base_url: "{base_url}"
    concurrency: 2
    options: {{max_retries: 0{extra}}}
"""


def build_args(source: Path, out: Path | str, *extra: str, limit: int = 12) -> Sequence[str]:
    return (
        "build",
        "--source",
        str(source),
        "--out",
        str(out),
        "--limit",
        str(limit),
        "--quiet",
        *extra,
    )
