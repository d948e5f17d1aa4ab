"""``kind: selfknow`` recipes: the self-knowledge (Line of Duty) generation/classification study.

Example (``nabench/recipes/selfknow.yaml``)::

    kind: selfknow
    name: selfknow
    version: 1.0.0
    seed: 20250501
    generator:
      backend: local            # local | openai | vllm (see nabench.llm)
      model: null               # local: GGUF path (default SmolLM2); openai/vllm: model name
      base_url: null            # openai only
      temperature: 1.0
      styles: [vanilla, challenge]
      n_per_class: 50           # per class and per style; --limit caps it
      max_attempts: 3
    classifier:
      same_as_generator: true   # or backend/model/base_url of another model (cross-model)
      temperature: 0.0
      style: same               # vanilla | challenge | same (the task's generation style)
    publish:
      repo_id: ORG/selfknow
      private: false
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from nabench.schemas.model import SPEC_CONFIG, ModelSpec
from nabench.schemas.recipe import RecipeName, Seed, SemVer
from nabench.selfknow.prompts import Style


class _Spec(BaseModel):
    model_config = SPEC_CONFIG


class SelfKnowModel(ModelSpec):
    """A selfknow model section: the model (a `ModelSpec`) and how this role asks it."""

    backend: Literal["local", "openai", "vllm"] = "local"
    max_tokens: int = Field(default=256, ge=1)
    max_attempts: int = Field(default=3, ge=1)
    max_analysis_chars: int = Field(default=300, ge=1)
    chunk_size: int = Field(
        default=8, ge=1, description="Requests per cache commit (a kill loses at most one chunk)."
    )


def _vanilla() -> list[Style]:
    return ["vanilla"]


class GeneratorSpec(SelfKnowModel):
    temperature: float = Field(default=1.0, ge=0.0)
    styles: list[Style] = Field(default_factory=_vanilla, min_length=1)
    n_per_class: int = Field(default=50, ge=1)
    batch_size: int = Field(default=1, ge=1, description="Slots asked for in one request.")
    max_task_chars: int = Field(default=400, ge=1)
    refill_rounds: int = Field(
        default=0,
        ge=0,
        description="Rounds that re-ask every quarantined slot with a new seed (cached), until "
        "each class x type cell meets its quota; what is still missing is reported per cell.",
    )

    @field_validator("styles")
    @classmethod
    def _unique(cls, value: list[Style]) -> list[Style]:
        if len(set(value)) != len(value):
            raise ValueError(f"styles repeat: {value}")
        return value


class ClassifierSpec(SelfKnowModel):
    same_as_generator: bool = Field(
        default=True,
        description="Use the generator's model (its ModelSpec keys: backend, model, base_url, "
        "options, concurrency, engine, ray). False with another model is cross-model "
        "classification.",
    )
    temperature: float = Field(default=0.0, ge=0.0)
    style: Literal["vanilla", "challenge", "same"] = "same"
    max_answer_chars: int = Field(default=400, ge=1)

    @model_validator(mode="after")
    def _no_model_when_same(self) -> ClassifierSpec:
        own = set(ModelSpec.model_fields) & self.model_fields_set
        if self.same_as_generator and own:
            raise ValueError(
                f"classifier: {', '.join(sorted(own))} need(s) same_as_generator: false "
                "(cross-model classification)"
            )
        return self


class SelfKnowPublishSpec(_Spec):
    repo_id: str | None = None
    private: bool = False
    license: str | None = Field(
        default=None, description="Licence of the generated data (card metadata); unset: none."
    )


class SelfKnowRecipe(_Spec):
    kind: Literal["selfknow"]
    name: RecipeName
    version: SemVer
    description: str = ""
    seed: Seed = 0
    generator: GeneratorSpec = Field(default_factory=GeneratorSpec)
    classifier: ClassifierSpec = Field(default_factory=ClassifierSpec)
    publish: SelfKnowPublishSpec = Field(default_factory=SelfKnowPublishSpec)

    def classifier_model(self) -> ModelSpec:
        """The model that classifies: the generator's, or the classifier's own (cross-model)."""
        source = self.generator if self.classifier.same_as_generator else self.classifier
        return source.model_only()
