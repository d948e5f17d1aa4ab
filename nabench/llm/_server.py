"""Start OpenAI-compatible servers on loopback: llama-cpp-python (and vLLM) subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from nabench.core.errors import NabenchError

from ._models import SMOLLM2_ID, default_hf_dir, model_id_from_path, smollm2_gguf_path
from ._vllm import default_dtype, vllm_cpu_env


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def llama_server_command(
    model: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    n_ctx: int = 2048,
    alias: str | None = None,
    n_threads: int | None = None,
) -> list[str]:
    """argv of llama-cpp-python's OpenAI-compatible server for `model` (ChatML)."""
    path = Path(model) if model else smollm2_gguf_path()
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(path),
        "--model_alias", alias or model_id_from_path(path),
        "--host", host,
        "--port", str(port),
        "--chat_format", "chatml",
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads or os.cpu_count() or 1),
    ]  # fmt: skip


def vllm_server_command(
    model_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_name: str | None = None,
    max_model_len: int = 2048,
    dtype: str | None = None,
) -> list[str]:
    """argv of vLLM's OpenAI server (the `vllm` console script is broken in vllm-cpu)."""

    path = Path(model_dir) if model_dir else default_hf_dir()
    return [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(path),
        "--served-model-name", served_name or model_id_from_path(path),
        "--host", host,
        "--port", str(port),
        "--max-model-len", str(max_model_len),
        "--enforce-eager",
        "--dtype", dtype or default_dtype(),
    ]  # fmt: skip


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def serve(
    command: Sequence[str],
    base_url: str,
    timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Run `command` until `base_url`/models answers; yield `base_url`; stop it after."""
    with tempfile.TemporaryFile(mode="w+b") as log:
        proc = subprocess.Popen(
            list(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + timeout_s
            while not _ready(f"{base_url}/models"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-3000:]
                    why = "exited" if proc.poll() is not None else f"not ready in {timeout_s}s"
                    raise NabenchError(f"server {why}: {' '.join(command[:4])} ...\n{tail}")
                time.sleep(0.3)
            yield base_url
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@contextmanager
def local_server(
    port: int | None = None,
    model: str | Path | None = None,
    host: str = "127.0.0.1",
    n_ctx: int = 2048,
    timeout_s: float = 120.0,
    n_threads: int | None = None,
) -> Iterator[str]:
    """llama-cpp-python server on a free port; yields its base URL (".../v1")."""
    port = port or free_port(host)
    cmd = llama_server_command(model, host=host, port=port, n_ctx=n_ctx, n_threads=n_threads)
    with serve(cmd, f"http://{host}:{port}/v1", timeout_s=timeout_s) as url:
        yield url


@contextmanager
def vllm_server(
    port: int | None = None,
    model_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    served_name: str = SMOLLM2_ID,
    timeout_s: float = 300.0,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """vLLM OpenAI server on a free port (CPU settings from `vllm_cpu_env`)."""

    port = port or free_port(host)
    cmd = vllm_server_command(model_dir, host=host, port=port, served_name=served_name)
    with serve(
        cmd, f"http://{host}:{port}/v1", timeout_s=timeout_s, env={**vllm_cpu_env(), **(env or {})}
    ) as url:
        yield url
