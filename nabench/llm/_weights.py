"""Weights fingerprint: which weights a backend that loads them from disk answers with.

Two checkpoints saved under one file name (``/ckpt/a/model.gguf``, ``/ckpt/b/model.gguf``)
have one model id (`model_id_from_path`), so the id alone cannot tell them apart. The
fingerprint is a content hash, never a path: it goes into every response-cache key
(`Backend.revision`), so a second checkpoint never reads the first one's answers, and into
the eval records as ``model_revision``, so a report counts them as two models.

* A file (a GGUF for ``local``, or for vLLM): ``sha256:`` and the SHA-256 of its bytes (what
  ``sha256sum FILE`` prints, so anyone can check it).
* A Hugging Face folder (``vllm``): SHA-256 over (file name, file digest) of every file at
  its top level that changes what the model answers: the weights (``*.safetensors``,
  ``*.bin``, ``*.pt``, ``*.pth``, ``*.gguf``), the architecture and generation defaults
  (``config.json``, ``generation_config.json``: vLLM takes default sampling settings from
  it), the tokenizer and chat template (``tokenizer.json``, ``tokenizer_config.json``,
  ``special_tokens_map.json``, ``*.model``, ``*.tiktoken``, ``vocab.txt``, ``merges.txt``,
  ``*.jinja``) and any other ``*.json`` (weight indexes). Not read: README, licences,
  hidden files and sub-folders (vLLM loads a model from its top level), which change no
  answer.

A file's digest is computed once per process and memoised by (resolved path, size,
mtime_ns): a file replaced in place gets a new digest, an unchanged one is not re-read.
SHA-256, not blake2b: with the CPU's SHA extensions it hashed 3x faster here (370 vs
126 MB/s on a loaded 2-core machine), and it is the digest the rest of nabench records.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from pathlib import Path

from nabench.core.errors import NabenchError

__all__ = [
    "MODEL_FILE_SUFFIXES",
    "declared_revision",
    "fingerprint_files",
    "model_files",
    "weights_fingerprint",
]

PREFIX = "sha256:"
MODEL_FILE_SUFFIXES = frozenset(
    {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".json", ".model", ".tiktoken", ".jinja"}
)
_MODEL_FILE_NAMES = frozenset({"vocab.txt", "merges.txt"})

_memo: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of the bytes of `path`, memoised by (resolved path, size, mtime_ns)."""
    resolved = path.resolve()
    st = resolved.stat()
    key = (str(resolved), st.st_size, st.st_mtime_ns)
    with _lock:
        known = _memo.get(key)
    if known is not None:
        return known
    with resolved.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    with _lock:
        _memo[key] = digest
    return digest


def model_files(folder: Path) -> list[Path]:
    """The files of a Hugging Face model folder the fingerprint reads (see module doc)."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and (p.suffix.lower() in MODEL_FILE_SUFFIXES or p.name in _MODEL_FILE_NAMES)
    )


def fingerprint_files(named: Iterable[tuple[str, Path]]) -> str:
    """``sha256:<hex>`` over (name, content digest) of each file, in name order."""
    h = hashlib.sha256()
    for name, path in sorted(named):
        h.update(f"{name}\0{file_digest(path)}\n".encode())
    return PREFIX + h.hexdigest()


def weights_fingerprint(path: str | Path) -> str:
    """The fingerprint of a model file (its content) or a Hugging Face folder (its model
    files); one line naming the path when there is nothing to fingerprint."""
    p = Path(path)
    try:
        if p.is_file():
            return PREFIX + file_digest(p)
        if p.is_dir():
            files = model_files(p)
            if not files:
                raise NabenchError(f"model folder {p} holds no weight or config file")
            return fingerprint_files((f.name, f) for f in files)
    except OSError as exc:
        raise NabenchError(f"cannot read the model weights at {p}: {exc.strerror or exc}") from None
    raise NabenchError(f"model weights not found: {p}")


def declared_revision(value: object) -> str | None:
    """A revision the user declared (`--option revision=...`), as text. `--option` values are
    read as YAML, so an unquoted commit such as 0123456 arrives as the octal number 42798 and
    `1_000` as 1000: recording str() of that would name other weights, so it is refused."""
    if value is None or isinstance(value, str):
        return value
    raise NabenchError(
        f"--option revision: {value!r} was read as a {type(value).__name__}, not text; "
        "quote it (--option \"revision='0123456'\")"
    )
