"""Ray engine pieces that need no cluster: the request body and the settings."""

from __future__ import annotations

import json

import pytest

from nabench.core.errors import NabenchError
from nabench.llm import ChatRequest, RayEngine, chat_payload, make_engine
from nabench.llm.options import engine_settings
from nabench.schemas.model import ModelSpec


def test_chat_payload_matches_the_openai_backend_fields() -> None:
    req = ChatRequest.chat(
        "Q?", system="S", max_tokens=7, temperature=0.5, stop=("\n",), seed=3, logprobs=2
    )
    body = chat_payload(req, "m", "json_schema")
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q?"}],
        "max_tokens": 7,
        "temperature": 0.5,
        "top_p": 1.0,
        "stop": ["\n"],
        "seed": 3,
        "logprobs": True,
        "top_logprobs": 2,
    }
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    llama = chat_payload(ChatRequest.chat("Q?", json_schema=json.dumps(schema)), "m", "json_object")
    assert llama["response_format"] == {"type": "json_object", "schema": schema}
    # min_tokens (artifacts-paper: 5) reaches the server, as the openai backend sends it
    art = ChatRequest(prompt="Answer:", min_tokens=5, max_tokens=200)
    assert chat_payload(art, "m", "json_schema")["min_tokens"] == 5
    assert "min_tokens" not in body


def test_unknown_ray_option_is_one_clear_error() -> None:
    with pytest.raises(NabenchError, match="unknown ray option"):
        RayEngine(qsp=4)


def test_engine_options_are_split_from_backend_options() -> None:
    options = {"ray.qps": 4, "n_threads": 1, "ray.batch_size": 2}
    engine, rest = engine_settings(ModelSpec(engine="ray", options=options))
    assert engine == {"qps": 4, "batch_size": 2} and rest == {"n_threads": 1}
    with pytest.raises(NabenchError, match="unknown engine 'spark'"):
        engine_settings(ModelSpec(options={"spark.x": 1}))
    with pytest.raises(NabenchError, match="unknown engine 'dask'"):
        make_engine("dask")


def test_describe_never_holds_endpoint_urls() -> None:
    engine = RayEngine(endpoints=["http://user:secret@10.0.0.1:8000/v1"], qps=2)
    described = json.dumps(engine.describe())
    assert "secret" not in described and "10.0.0.1" not in described
    assert engine.describe()["ray"]["qps"] == 2


@pytest.mark.parametrize(
    "key", ["replicas", "tensor_parallel_size", "accelerator_type", "engine_kwargs"]
)
def test_vllm_replica_settings_are_refused_not_silently_ignored(key: str) -> None:
    """These were accepted and never reached anything (no vLLM engine processor is run):
    `ray.replicas=4` meant one HTTP worker per endpoint, whatever it said."""
    with pytest.raises(NabenchError, match=f"unknown ray option.*{key}"):
        RayEngine(**{key: 4})
