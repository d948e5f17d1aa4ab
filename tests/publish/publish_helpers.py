"""Helpers shared by the publish tests (imported by name; pytest puts this folder on sys.path)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult

LIMIT = 40


def build_mmlu(
    mmlu_dir: Path, out: Path, *, version: str = "1.0.0", limit: int = LIMIT, labels: str = "none"
) -> BuildResult:
    recipe = load_recipe("mmlu-na").model_copy(update={"version": version})
    options = BuildOptions(
        source=str(mmlu_dir), out=out, labels=labels, limit=limit, progress=False
    )
    return build(recipe, options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")
