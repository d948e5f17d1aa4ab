"""The parts of a recipe (a declarative build spec in YAML, validated by pydantic like lm-eval
task configs) that every recipe kind shares: source, labels, publish target, version, seed.
The NA recipe itself, whose variants are the builders' own specs, is `perturb.recipe`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    ValidationError,
    model_validator,
)

from nabench.core.version import release_version
from nabench.schemas.model import SPEC_CONFIG, ModelSpec


def _check_semver(value: str) -> str:
    release_version(value)  # one rule for every version (nabench.core.version)
    return value


SemVer = Annotated[str, AfterValidator(_check_semver)]
# Seeds are stored in int64 columns (`seed`); a larger one would overflow at write time.
INT64_MAX = 2**63 - 1
# strict: `seed: true` is not the seed 1, nor "7" the seed 7.
Seed = Annotated[int, Field(ge=-INT64_MAX - 1, le=INT64_MAX, strict=True)]


class _Spec(BaseModel):
    model_config = SPEC_CONFIG


# A recipe's name: what its build, its lm-eval tasks and its card are named after.
RecipeName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]


def no_repeats(name: str) -> Callable[[list[Any]], list[Any]]:
    """A list field's check that no entry is given twice (`<name> repeat [...]`)."""

    def check(value: list[Any]) -> list[Any]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"{name} repeat {dupes}")
        return value

    return check


class SourceSpec(_Spec):
    dataset: Literal["mmlu", "arc_challenge", "hellaswag", "gpqa"]
    hub_id: str | None = Field(default=None, description="Defaults to the source's Hub id.")
    config: str | None = None
    splits: Annotated[list[str], AfterValidator(no_repeats("splits"))] = Field(min_length=1)
    revision: str | None = None


class LLMLabelerSpec(ModelSpec):
    """`labels.llm`: the labeling model (a `ModelSpec`), its guideline and error budget."""

    guideline: str = "na_applicability"
    max_error_share: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of requests that may get no answer (dead endpoint, HTTP 5xx) "
        "before the build fails; a model's invalid output does not count.",
    )


class LabelsSpec(_Spec):
    """`none`: every eligible item is used; `file`: a labels file; `llm`: label with a model."""

    mode: Literal["none", "file", "llm"] = "none"
    path: str | None = None
    llm: LLMLabelerSpec | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LabelsSpec:
        if self.mode == "file" and not self.path:
            raise ValueError("labels.mode 'file' needs labels.path")
        if self.mode == "llm" and self.llm is None:
            raise ValueError("labels.mode 'llm' needs a labels.llm section")
        return self


class PublishSpec(_Spec):
    repo_id: str | None = None
    private: bool = False


class RecipeHeader(_Spec):
    """The head of every recipe read from a source dataset (`na`, `na-train`, `artifacts`):
    one name rule, one version rule, one seed type. Each kind narrows `kind` to its own."""

    name: RecipeName
    version: SemVer
    description: str = ""
    kind: str
    source: SourceSpec
    seed: Seed = 0


def format_validation_error(exc: ValidationError, origin: str) -> str:
    """One readable line per problem, naming the field path."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"field '{loc}': {err['msg']}")
    return f"{origin}: invalid recipe: " + "; ".join(parts)
