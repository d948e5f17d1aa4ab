"""One `ModelSpec`, one `open_backend(spec)`: what a recipe's model section or the model flags
say reaches the backend and the engine, and nothing of the engine's reaches the backend."""

from __future__ import annotations

from typing import Any

import pytest

from nabench.core.errors import NabenchError
from nabench.llm import RayEngine
from nabench.llm.options import open_backend
from nabench.pipelines.registry import load_recipe
from nabench.schemas.model import ModelSpec
from nabench.schemas.na_train import SamplerSpec
from nabench.schemas.recipe import LLMLabelerSpec
from nabench.selfknow.recipe import ClassifierSpec, GeneratorSpec

DEAD = "http://127.0.0.1:9/v1"  # never contacted: opening a backend sends no request


def test_engine_options_configure_the_engine_not_the_backend() -> None:
    spec = ModelSpec(
        backend="openai", model="m", base_url=DEAD, engine="ray", options={"ray.qps": 4}
    )
    with open_backend(spec) as backend:
        assert isinstance(backend.engine, RayEngine)
        assert backend.engine.settings.qps == 4
        assert backend.base_url == DEAD


def test_a_recipe_ray_section_and_ray_options_merge_with_options_winning() -> None:
    spec = ModelSpec(
        backend="openai",
        model="m",
        base_url=DEAD,
        engine="ray",
        ray={"qps": 2, "batch_size": 3},
        options={"ray.qps": 5},
    )
    with open_backend(spec) as backend:
        assert isinstance(backend.engine, RayEngine)
        assert (backend.engine.settings.qps, backend.engine.settings.batch_size) == (5, 3)


@pytest.mark.parametrize(
    "spec",
    [
        ModelSpec(backend="openai", model="m", base_url=DEAD, options={"ray.qps": 4}),
        ModelSpec(backend="openai", model="m", base_url=DEAD, ray={"qps": 4}),
    ],
    ids=["option", "recipe-section"],
)
def test_ray_settings_without_engine_ray_are_refused_not_dropped(spec: ModelSpec) -> None:
    with pytest.raises(NabenchError, match=r"engine 'ray' only.*'local'"):
        open_backend(spec)


def test_unknown_engine_and_backend_option_are_one_line_errors() -> None:
    with pytest.raises(NabenchError, match="unknown engine 'spark'"):
        open_backend(ModelSpec(backend="openai", model="m", base_url=DEAD, engine="spark"))
    with pytest.raises(NabenchError, match=r"backend 'openai':.*n_threads"):
        open_backend(
            ModelSpec(backend="openai", model="m", base_url=DEAD, options={"n_threads": 1})
        )


@pytest.mark.parametrize("section", [LLMLabelerSpec, SamplerSpec, GeneratorSpec, ClassifierSpec])
def test_every_recipe_model_section_is_a_model_spec(section: type[ModelSpec]) -> None:
    assert issubclass(section, ModelSpec)
    fields = {"engine": "ray", "ray": {"qps": 1}, "concurrency": 2, "backend": "openai"}
    extra: dict[str, Any] = {"same_as_generator": False} if section is ClassifierSpec else {}
    spec = section(**fields, **extra)
    assert spec.model_only() == ModelSpec(**fields)


def test_recipes_keep_their_model_sections() -> None:
    labeler = load_recipe("mmlu-na").labels.llm
    assert labeler is not None
    assert labeler.model_only() == ModelSpec(backend="local")
    sampler = load_recipe("mmlu-na-train", ["sampler.engine=ray"]).sampler
    assert sampler.engine == "ray"


def test_a_classifier_on_the_generators_model_takes_no_model_keys() -> None:
    with pytest.raises(ValueError, match="engine need"):
        ClassifierSpec(engine="ray")
