"""The model flags: one declaration, the same meaning in every model-calling command."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.cli.model_flags import parse_backend_options
from nabench.core.errors import NabenchError
from nabench.llm import get_backend
from nabench.llm.options import backend_kwargs

MODEL_COMMANDS = (
    ["label"],
    ["eval"],
    ["selfknow", "generate"],
    ["selfknow", "classify"],
    ["artifacts", "infer-questions"],
)
SHARED = ("--backend", "--model", "--base-url", "--concurrency", "--option", "--cache")
RUN = ("--max-tokens", "--quiet")


def _flags(command: list[str]) -> set[str]:
    result = CliRunner().invoke(main, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return set(re.findall(r"^\s+(--[a-z-]+)", result.output, flags=re.M))


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=" ".join)
def test_every_model_command_has_the_shared_flags(command: list[str]) -> None:
    assert set(SHARED) | set(RUN) <= _flags(command)


def test_option_values_are_yaml_scalars() -> None:
    assert parse_backend_options(["n_threads=1", "n-ctx=4096", "eager=true", "x=a b"]) == {
        "n_threads": 1,
        "n_ctx": 4096,
        "eager": True,
        "x": "a b",
    }
    for bad in ("n_threads", "=3"):
        with pytest.raises(NabenchError, match="KEY=VALUE"):
            parse_backend_options([bad])


def test_flags_map_onto_each_backend() -> None:
    assert backend_kwargs("local", "m.gguf", options={"n_threads": 1}) == {
        "model_path": "m.gguf",
        "n_threads": 1,
    }
    assert backend_kwargs("openai", "x", "http://h/v1", 4) == {
        "model": "x",
        "base_url": "http://h/v1",
        "concurrency": 4,
    }
    assert backend_kwargs("vllm", "org/model", options={"tensor_parallel_size": 2}) == {
        "model": "org/model",
        "tensor_parallel_size": 2,
    }
    with pytest.raises(NabenchError, match="base-url applies to the openai backend"):
        backend_kwargs("local", None, "http://h")


def test_bad_option_is_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(
        main, ["eval", str(tmp_path), "--option", "n_threads", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code != 0
    assert "error: bad --option 'n_threads': expected KEY=VALUE" in result.output
    assert "Traceback" not in result.output


@pytest.mark.vllm
def test_a_misspelt_vllm_engine_option_is_one_error_line() -> None:
    """vLLM's LLM passes unknown keywords on to EngineArgs, whose TypeError was printed as an
    internal error after vLLM's start-up; every backend refuses a misspelt --option alike,
    before any model loads."""
    from testdeps import require

    require("vllm", "run scripts/install_vllm_cpu.sh")
    for backend, options in (("vllm", {"tensor_paralel_size": 2}), ("local", {"n_thread": 1})):
        with pytest.raises(NabenchError, match=rf"backend '{backend}': .*{next(iter(options))}"):
            get_backend(backend, **backend_kwargs(backend, "org/none", options=options))
