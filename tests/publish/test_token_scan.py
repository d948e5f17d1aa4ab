"""Nothing a push writes or prints carries the token (dry run, git target, a real HfApi whose
requests reach a loopback server that sees the token and refuses the push)."""

from __future__ import annotations

import json
import logging
import secrets
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from huggingface_hub import HfApi
from test_hub_push import REPO_ID

from nabench.cli import main
from nabench.publish.hub import push


def _cli() -> Any:
    return main


def scan_tree(root: Path, token: bytes) -> list[str]:
    """Files under root whose bytes hold the token; git objects are scanned decompressed."""
    hits = [str(p) for p in root.rglob("*") if p.is_file() and token in p.read_bytes()]
    for git_dir in {p.parent for p in root.rglob("HEAD") if (p.parent / "objects").is_dir()}:
        dump = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
            capture_output=True,
            check=True,
        ).stdout
        if token in dump:
            hits.append(f"{git_dir} (git objects)")
    return hits


def _refusing_hub() -> tuple[list[str], ThreadingHTTPServer]:
    """A loopback server answering 500 to everything; `seen` collects Authorization headers."""
    seen: list[str] = []

    class Refuse(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            body = json.dumps({"error": "refused"}).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_HEAD = _refuse

        def log_message(self, *args: Any) -> None:  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return seen, server


def test_scanner_finds_a_planted_token(tmp_path: Path) -> None:
    token = b"hf_dummy" + secrets.token_hex(12).encode()
    (tmp_path / "a.txt").write_bytes(b"x" + token)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    subprocess.run(
        ["git", "--git-dir", str(repo), "hash-object", "-w", "--stdin"], input=token, check=True
    )
    hits = scan_tree(tmp_path, token)
    assert any(h.endswith("a.txt") for h in hits) and any("git objects" in h for h in hits)


def test_no_token_trace(
    staged_v1: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    token = "hf_dummy" + secrets.token_hex(16)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    outputs: list[str] = []

    # 1. Dry run: prints the plan, and makes no network call at all.
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network call during a dry run: {args}")

    with monkeypatch.context() as m:
        m.setattr(socket.socket, "connect", no_network)
        m.setattr(socket, "create_connection", no_network)
        res = runner.invoke(_cli(), ["publish", str(staged_v1), "--repo-id", REPO_ID, "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "add" in res.output and "v1.0.0" in res.output
    outputs.append(res.output)

    # 2. The git target, twice (the second is refused: existing tag).
    repo = tmp_path / "internal" / "mmlu-na.git"
    for expected in (0, 2):
        res = runner.invoke(
            _cli(), ["publish", str(staged_v1), "--repo-id", REPO_ID, "--to", f"git:{repo}"]
        )
        assert res.exit_code == expected, res.output
        outputs.append(res.output)
    assert "already exists" in outputs[-1]

    # 3. A real HfApi against a loopback "Hub" that records what reaches it and refuses the
    #    push: the token is really read and sent (so the scan below can find it), and the
    #    failure, the logs and the outputs still do not carry it.
    seen, server = _refusing_hub()
    try:
        with pytest.raises(Exception) as failed:
            push(staged_v1, REPO_ID, api=HfApi(endpoint=f"http://127.0.0.1:{server.server_port}"))
    finally:
        server.shutdown()
        server.server_close()
    assert f"Bearer {token}" in seen  # the token was read from HF_TOKEN and sent
    sent = [str(failed.value), repr(failed.value)]

    captured = capfd.readouterr()
    texts = [*outputs, *sent, caplog.text, captured.out, captured.err]
    assert not [t for t in texts if token in t]
    assert scan_tree(tmp_path, token.encode()) == []
    assert scan_tree(staged_v1, token.encode()) == []
