"""Keys and URL credentials in a recipe never reach a written file (issue 08, "Secrets never
stored"): every byte of the build is searched for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safety_helpers import build_args, http_server, nabench, write_recipe

from nabench.core.redact import MASK, redact, scrub

API_KEY = "sk-live-7f3a9c1e5b2d4f60a8e1"
URL_KEY = "sk-url-4c2e8a0b6d1f3e5a"
HF_TOKEN = "hf_qwertyuiopASDFGHJKL123456"
PASSWORD = "pw-correct-horse-battery"
SECRETS = (API_KEY, URL_KEY, HF_TOKEN, PASSWORD)


def _recipe(base_url: str) -> str:
    return f"""\
name: secret-na
version: 1.0.0
kind: na
source: {{dataset: mmlu, splits: [test]}}
variants:
  - kind: original
  - kind: na_keyed
labels:
  mode: llm
  llm:
    backend: openai
    base_url: "{base_url}"
    options:
      api_key: {API_KEY}
      max_retries: 0
      timeout_s: 120
publish:
  repo_id: "https://bob:{PASSWORD}@hub.example/datasets/x"
"""


def _assert_no_secret(out: Path) -> None:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for secret in (*SECRETS, "bob:"):
            assert secret.encode() not in data, f"{secret} in {path}"


def test_recipe_secrets_are_redacted_in_every_written_file(mmlu_dir: Path, tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path / "r.yaml",
        _recipe(f"https://alice:{URL_KEY}@llm.example/v1").replace(
            "      max_retries: 0\n", f"      max_retries: 0\n      hf_token: {HF_TOKEN}\n"
        ),
    )
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "id,na_applicable,model\n" + "".join(f"mmlu/all/test/{i:05d},true,m\n" for i in range(12))
    )
    out = tmp_path / "b"
    run = nabench(*build_args(mmlu_dir, out, "--labels", str(labels)), str(recipe))
    assert run.code == 0, run.stderr
    _assert_no_secret(out)
    for secret in SECRETS:
        assert secret not in run.stdout + run.stderr
    llm = json.loads((out / "build.json").read_text())["recipe"]["labels"]["llm"]
    assert llm["options"] == {"api_key": MASK, "max_retries": 0, "timeout_s": 120, "hf_token": MASK}
    assert llm["base_url"] == f"https://{MASK}@llm.example/v1"


def test_redact_keeps_settings_that_only_look_alike() -> None:
    clean = redact(
        {
            "max_tokens": 64,
            "tokenizer": "gpt2",
            "author": "ann",
            "db-password": "x1234",
            "Authorization": "Bearer abcdefgh",
            "url": "http://host/path@v2",
        }
    )
    assert clean.value == {
        "max_tokens": 64,
        "tokenizer": "gpt2",
        "author": "ann",
        "db-password": MASK,
        "Authorization": MASK,
        "url": "http://host/path@v2",
    }
    assert scrub("key x1234 in http://u:p4ss@h", clean.secrets) == f"key {MASK} in http://{MASK}@h"


def test_a_key_in_a_url_query_is_masked() -> None:
    """`?api_key=...` (a form some OpenAI-compatible gateways take) was written to run.json
    whole; other parameters and token counts stay as they are."""
    url = "http://u:sk-pass123@127.0.0.1:9/v1?api_key=sk-QUERYSECRET789&max_tokens=5&x="
    clean = redact({"endpoint": url})
    assert clean.value == {
        "endpoint": f"http://{MASK}@127.0.0.1:9/v1?api_key={MASK}&max_tokens=5&x="
    }
    assert clean.secrets == {"sk-pass123", "sk-QUERYSECRET789"}
    assert "sk-QUERYSECRET789" not in scrub(f"error from {url}", ())


@pytest.mark.slow
def test_secrets_with_a_real_llama_cpp_server(
    mmlu_dir: Path, tmp_path: Path, llama_server: str
) -> None:
    """The model block of a real label run (backend, model, run stats) is written too."""
    base = llama_server.replace("http://", f"http://alice:{URL_KEY}@")
    recipe = write_recipe(tmp_path / "r.yaml", _recipe(base))
    out = tmp_path / "b"
    run = nabench(
        *build_args(mmlu_dir, out, "--cache", str(tmp_path / "c.sqlite"), limit=3),
        str(recipe),
    )
    assert run.code == 0, run.stderr
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["labels"]["mode"] == "llm" and manifest["labels"]["runs"]
    _assert_no_secret(out)


def _failing_server(method: str, path: str, body: bytes) -> tuple[int, dict[str, object] | str]:
    return 500, {"error": {"message": "model server down"}}


@pytest.mark.parametrize("via", ["flag", "env"])
def test_eval_never_writes_base_url_credentials(
    plain_build: Path, tmp_path: Path, via: str
) -> None:
    """Issue 24, finding 5: `user:sk-…@` of --base-url / OPENAI_BASE_URL reached run.json and
    every summary, before the run even failed."""

    secret = "sk-secret-9d8c7b6a5f4e"
    out = tmp_path / "results"
    with http_server(_failing_server) as url:
        with_key = url.replace("http://", f"http://user:{secret}@") + "/v1"
        flag = ["--base-url", with_key] if via == "flag" else []
        env = {"OPENAI_BASE_URL": with_key} if via == "env" else {}
        run = nabench("eval", str(plain_build), "--backend", "openai", "--model", "tiny",
                      *flag, "--option", "max_retries=0", "--out", str(out),
                      "--cache", str(out / "cache.sqlite"), "--config", "original",
                      "--limit", "3", "--quiet", env=env)  # fmt: skip
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in written), (run.code, run.stderr)
    for path in written:
        assert secret.encode() not in path.read_bytes(), f"{secret} in {path}"
    assert secret not in run.stdout + run.stderr
    run_json = json.loads(next(p for p in written if p.name == "run.json").read_text())
    assert run_json["settings"]["endpoint"].startswith(f"http://{MASK}@127.0.0.1:")


@pytest.mark.parametrize("via", ["option", "env"])
def test_a_key_the_server_echoes_in_its_error_is_never_printed(
    plain_build: Path, tmp_path: Path, via: str
) -> None:
    """A gateway that rejects a key may quote it in its 401 body ("Received API Key = sk-…",
    as LiteLLM's proxy does); the error line printed the key whole (only URL credentials
    were scrubbed), from `--option api_key=` and from OPENAI_API_KEY alike."""

    secret = "sk-echoed-3e5f7a9c1b2d4e6f"

    def echo(method: str, path: str, body: bytes) -> tuple[int, dict[str, object]]:
        if method == "GET":
            return 200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]}
        return 401, {"error": {"message": f"Invalid token. Received API Key = {secret}"}}

    out = tmp_path / "results"
    with http_server(echo) as url:
        flag = ["--option", f"api_key={secret}"] if via == "option" else []
        env = {"OPENAI_API_KEY": secret} if via == "env" else {"OPENAI_API_KEY": None}
        run = nabench("eval", str(plain_build), "--backend", "openai", "--model", "tiny",
                      "--base-url", url + "/v1", *flag, "--option", "max_retries=0",
                      "--out", str(out), "--cache", str(out / "cache.sqlite"),
                      "--config", "original", "--limit", "3", "--quiet", env=env)  # fmt: skip
    assert run.code != 0 and "401" in run.stderr, (run.code, run.stderr)
    assert secret not in run.stdout + run.stderr
    assert MASK in run.stderr
    for path in (p for p in out.rglob("*") if p.is_file()):
        assert secret.encode() not in path.read_bytes(), f"{secret} in {path}"
