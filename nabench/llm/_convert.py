"""Convert a GGUF checkpoint (default: SmolLM2-135M-Instruct Q4_1) to a Hugging Face folder.

vLLM on CPU loads the dense HF folder. The GGUF is dequantized by transformers
(`GgufConfig(dequantize=True)`); the quantizer and `quantization_config` are cleared so the
saved folder is a plain dense model. The tokenizer (with its ChatML template) comes from
the GGUF metadata too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.core.out_guard import OutKind, check_folder

from ._models import smollm2_gguf_path

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# What `save_pretrained` of a model and its tokenizer writes: OUT_DIR holding anything else
# is a user's folder (a project with its own config.json), never written into.
_HF_FILE = re.compile(
    r"(config|generation_config|tokenizer|tokenizer_config|special_tokens_map|added_tokens"
    r"|vocab)\.json|merges\.txt|chat_template\.jinja"
    r"|model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?"
)
HF_OUT = OutKind("a converted model folder", lambda rel, _path: bool(_HF_FILE.fullmatch(rel)))


def convert_gguf_to_hf(
    out_dir: str | Path, gguf_path: str | Path | None = None, force: bool = False
) -> Path:
    """Write a dense HF model + tokenizer converted from `gguf_path` into `out_dir`.

    Idempotent: an existing complete folder is kept unless `force`.
    """
    out = Path(out_dir)
    check_folder(out, HF_OUT)
    if not force and (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        return out
    gguf = Path(gguf_path) if gguf_path else smollm2_gguf_path()
    try:  # before the weights load (a minute on CPU): a folder that cannot be made fails now
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NabenchError(f"cannot make the output folder {out}: {exc.strerror}") from None
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise NabenchError("convert-hf needs torch, transformers and gguf (vllm extra)") from exc
    kwargs: dict[str, Any] = {"gguf_file": gguf.name, "dtype": torch.float32}
    try:
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # older transformers: the legacy loader always dequantizes
        pass
    model: Any = AutoModelForCausalLM.from_pretrained(str(gguf.parent), **kwargs)
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    for attr in ("quantization_config", "gguf_file"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if not getattr(tok, "chat_template", None) or "im_start" not in str(tok.chat_template):
        tok.chat_template = CHATML_TEMPLATE
    model.save_pretrained(out)
    tok.save_pretrained(out)
    cfg = json.loads((out / "config.json").read_text())
    if "quantization_config" in cfg:  # belt and braces: vLLM would try to quantize again
        del cfg["quantization_config"]
        (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out
