"""`ModelSpec`: which model answers a model job and how its requests are dispatched.

One description for every model job (labeling, eval, selfknow, na-train sampling, question
inference): the recipe sections that name a model extend it (same YAML keys), and the
command-line model flags build one. `nabench.llm.options.open_backend(spec)` turns it into a
backend with its engine. It lives in `schemas` (not `llm`) because recipe schemas, which sit
below the model layer, contain it; the backend and engine names are checked when it is
opened, against the registries of `nabench.llm`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SPEC_CONFIG", "ModelSpec"]

# Every recipe section's config: unknown keys refused, frozen, and strict, so `true` is not
# the count 1, "7" not 7, 2.0 not the count 2, "yes" not True; no NaN or infinity.
SPEC_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ModelSpec(BaseModel):
    """A model backend of `nabench.llm`, its options and the engine that dispatches to it."""

    model_config = SPEC_CONFIG

    backend: str = Field(default="local", description="local | openai | vllm (nabench.llm).")
    model: str | None = Field(
        default=None, description="local: GGUF path (default SmolLM2); openai/vllm: model name."
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible server (openai).")
    concurrency: int = Field(default=8, ge=1, description="Requests in flight (openai).")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Backend constructor options; `ENGINE.KEY` entries (e.g. `ray.qps`) "
        "configure the engine instead.",
    )
    engine: str = Field(default="local", description="local | ray (nabench.llm.ENGINES).")
    ray: dict[str, Any] = Field(
        default_factory=dict, description="RaySettings for engine: ray (as `ray.KEY` options)."
    )

    def model_only(self) -> ModelSpec:
        """The `ModelSpec` fields of this spec (a recipe section adds its own)."""
        return ModelSpec(**{name: getattr(self, name) for name in ModelSpec.model_fields})

    def same_model_as(self, other: ModelSpec) -> bool:
        """Whether `other` names the same model, options and engine."""
        return self.model_only() == other.model_only()
