"""The recipe: a declarative build spec (YAML) validated by pydantic, like lm-eval task configs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from nabench.core.version import release_version
from nabench.schemas.model import ModelSpec
from nabench.schemas.redux import AuditSpec


def _check_semver(value: str) -> str:
    release_version(value)  # one rule for every version (nabench.core.version)
    return value


SemVer = Annotated[str, AfterValidator(_check_semver)]
# Seeds are stored in int64 columns (`seed`); a larger one would overflow at write time.
INT64_MAX = 2**63 - 1
# strict: `seed: true` is not the seed 1, nor "7" the seed 7.
Seed = Annotated[int, Field(ge=-INT64_MAX - 1, le=INT64_MAX, strict=True)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceSpec(_Spec):
    dataset: Literal["mmlu", "arc_challenge", "hellaswag", "gpqa"]
    hub_id: str | None = Field(default=None, description="Defaults to the source's Hub id.")
    config: str | None = None
    splits: list[str] = Field(min_length=1)
    revision: str | None = None


class OriginalSpec(_Spec):
    kind: Literal["original"]


class NAKeyedSpec(_Spec):
    kind: Literal["na_keyed"]
    na_texts: list[str] = Field(default_factory=lambda: ["None of the above"], min_length=1)
    position: Literal["in_place", "last"] = Field(
        default="in_place",
        description="`in_place`: NA takes the gold option's slot (the NA study); `last`: the "
        "gold option is removed, the others keep their order and NA is the last option "
        "(test-writing guidelines). `last` configs are named `na_keyed_last`.",
    )


class ForeignKeySpec(_Spec):
    """The NA study's ablation control: the gold text replaced in place by another item's
    gold text (same subject), which is the key."""

    kind: Literal["foreign_key"]


class NADistractorSpec(_Spec):
    kind: Literal["na_distractor"]
    na_texts: list[str] = Field(default_factory=lambda: ["None of the above"], min_length=1)


class NAMixedSpec(_Spec):
    """NA replaces one option drawn per item; it is the key on a seeded 1/k of items."""

    kind: Literal["na_mixed"]
    na_texts: list[str] = Field(default_factory=lambda: ["None of the above"], min_length=1)


class AllOfTheAboveSpec(_Spec):
    kind: Literal["all_of_the_above"]
    text: str = "All of the above"


VariantSpec = Annotated[
    OriginalSpec
    | NAKeyedSpec
    | NADistractorSpec
    | NAMixedSpec
    | AllOfTheAboveSpec
    | ForeignKeySpec,
    Field(discriminator="kind"),
]


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


class Recipe(_Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    version: SemVer
    description: str = ""
    kind: Literal["na"] = "na"
    source: SourceSpec
    seed: Seed = 0
    exclude_subjects: list[str] = Field(
        default_factory=list,
        description="Subjects left out of every config (quarantined as `excluded_subject`).",
    )
    variants: list[VariantSpec] = Field(min_length=1)
    labels: LabelsSpec = Field(default_factory=LabelsSpec)
    audit: AuditSpec = Field(default_factory=AuditSpec)
    publish: PublishSpec = Field(default_factory=PublishSpec)

    @model_validator(mode="after")
    def _has_original(self) -> Recipe:
        if not any(v.kind == "original" for v in self.variants):
            raise ValueError("variants must include 'original' (the control every id traces to)")
        if self.audit.redux is not None and self.source.dataset != "mmlu":
            raise ValueError("audit.redux (MMLU-Redux) applies to mmlu recipes only")
        return self


def format_validation_error(exc: ValidationError, origin: str) -> str:
    """One readable line per problem, naming the field path."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"field '{loc}': {err['msg']}")
    return f"{origin}: invalid recipe: " + "; ".join(parts)
