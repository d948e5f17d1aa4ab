"""A model is its weights, not its file name: two checkpoints saved under one name are two
models to the response cache (no load needed: the key is computed before any request)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from llm_testlib import chat_body

from nabench.core.errors import NabenchError
from nabench.llm import (
    ChatRequest,
    Completion,
    LocalBackend,
    ResponseCache,
    count_hits,
    run_cached,
    weights_fingerprint,
)
from nabench.llm.options import open_backend
from nabench.schemas.model import ModelSpec

REQ = ChatRequest.chat("Which is right?", max_tokens=4)


def _checkpoint(folder: Path, content: bytes) -> Path:
    """A model file named like every other checkpoint of a training run."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.gguf"
    path.write_bytes(content)
    return path


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_two_checkpoints_with_one_file_name_never_share_a_cache_entry(
    tmp_path: Path, cache: ResponseCache
) -> None:
    a = LocalBackend(_checkpoint(tmp_path / "ckpt-a", b"GGUF weights of step 1000"))
    b = LocalBackend(_checkpoint(tmp_path / "ckpt-b", b"GGUF weights of step 2000"))
    assert a.model_id == b.model_id == "model"  # the id alone cannot tell them apart
    assert a.revision == _sha256(b"GGUF weights of step 1000")
    assert b.revision == _sha256(b"GGUF weights of step 2000")
    (key_a,) = cache.backend_keys(a, [REQ])
    (key_b,) = cache.backend_keys(b, [REQ])
    assert key_a != key_b
    cache.put_many([(key_a, a.model_id, REQ, Completion(text="Answer: A"))])
    assert count_hits(a, cache, [REQ]) == (1, 1)
    assert count_hits(b, cache, [REQ]) == (1, 0)  # b is sent to its own model
    for backend in (a, b):  # a hash, never the folder it was read from
        assert str(tmp_path) not in str(backend.revision)


def test_the_revision_is_the_content_not_the_path(tmp_path: Path) -> None:
    one = _checkpoint(tmp_path / "x", b"same weights")
    two = _checkpoint(tmp_path / "y", b"same weights")
    assert LocalBackend(one).revision == LocalBackend(two).revision == _sha256(b"same weights")
    # replaced in place: a new size and mtime, so the memoised digest is not reused
    one.write_bytes(b"retrained weights!")
    os.utime(one, ns=(1, 1))
    assert weights_fingerprint(one) == _sha256(b"retrained weights!")


def _hf_folder(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def _folder_digest(files: dict[str, bytes]) -> str:
    """The documented folder fingerprint, recomputed: SHA-256 over `name\\0digest\\n` lines."""
    lines = "".join(f"{n}\0{hashlib.sha256(d).hexdigest()}\n" for n, d in sorted(files.items()))
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def test_an_hf_folder_is_fingerprinted_by_its_weight_config_and_tokenizer_files(
    tmp_path: Path,
) -> None:
    model = {
        "model.safetensors": b"tensors",
        "config.json": b'{"hidden_size": 8}',
        "generation_config.json": b'{"temperature": 0.7}',
        "tokenizer.json": b"{}",
        "chat_template.jinja": b"{{ messages }}",
    }
    folder = _hf_folder(tmp_path / "SmolLM2", {**model, "README.md": b"# card"})
    (folder / ".cache").mkdir()  # huggingface_hub's download metadata
    (folder / ".cache" / "x.json").write_bytes(b"{}")
    assert weights_fingerprint(folder) == _folder_digest(model)
    (folder / "README.md").write_bytes(b"# another card")  # changes no answer
    assert weights_fingerprint(folder) == _folder_digest(model)
    other = _hf_folder(tmp_path / "other" / "SmolLM2", {**model, "chat_template.jinja": b"x"})
    assert weights_fingerprint(other) != weights_fingerprint(folder)
    with pytest.raises(NabenchError, match="holds no weight or config file"):
        weights_fingerprint(_hf_folder(tmp_path / "empty", {"README.md": b"x"}))


def _old_key(model_id: str, request: ChatRequest, namespace: str) -> str:
    """The key every cache written before revisions existed holds (the documented formula)."""
    payload = json.dumps(
        [model_id, request.canonical_json(), namespace],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def test_a_server_model_keeps_its_cache_keys_and_takes_a_declared_revision(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(lambda _path, _body, n: (200, chat_body(f"Answer: {'AB'[n % 2]}")))

    def backend(**options: Any) -> Any:
        spec = ModelSpec(backend="openai", model="ckpt", base_url=server.url, options=options)
        return open_backend(spec)

    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with backend() as plain:
            assert plain.revision is None
            assert cache.backend_keys(plain, [REQ], "ns") == [_old_key("ckpt", REQ, "ns")]
            first, _ = run_cached(plain, [REQ], cache, "ns", progress=False)
        with backend(revision="step-2000") as declared:
            assert declared.revision == "step-2000"
            again, stats = run_cached(declared, [REQ], cache, "ns", progress=False)
    # the declared checkpoint is asked itself, not answered from the undeclared one's cache
    assert (stats.calls, stats.cache_hits) == (1, 0) and len(server.posts) == 2
    assert (first[0].text, again[0].text) == ("Answer: A", "Answer: B")


@pytest.mark.parametrize("raw", ["0123456", "1_000", "true"])
def test_a_declared_revision_that_yaml_reads_as_no_text_is_refused(raw: str) -> None:
    """`--option` values are YAML: an unquoted commit 0123456 arrived as the octal 42798, and
    was recorded and keyed as the revision "42798" (other weights' name)."""
    from nabench.cli.model_flags import parse_backend_options

    options = parse_backend_options((f"revision={raw}",))
    spec = ModelSpec(backend="openai", model="ckpt", base_url="http://127.0.0.1:9/v1",
                     options=options)  # fmt: skip
    with pytest.raises(NabenchError, match=r"revision: .* not text; quote it"):
        open_backend(spec)
    quoted = parse_backend_options((f"revision='{raw}'",))
    spec = ModelSpec(backend="openai", model="ckpt", base_url="http://127.0.0.1:9/v1",
                     options=quoted)  # fmt: skip
    with open_backend(spec) as backend:
        assert backend.revision == raw
