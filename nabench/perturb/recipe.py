"""The recipes whose variants are builders: `na` (a benchmark of perturbed configs) and
`na-train` (fine-tuning data sampled on some of those variants).

A recipe's `variants` entries are the builders' own spec models (each in its builder's file),
collected from `BUILDERS`, so a new variant needs no line here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from nabench.perturb import BUILDERS
from nabench.perturb.na_distractor import NADistractorSpec
from nabench.perturb.na_keyed import NAKeyedSpec
from nabench.perturb.original import OriginalSpec
from nabench.schemas.na_train import (
    DecontaminationSpec,
    DPOSpec,
    LicenceSpec,
    SamplerSpec,
    SFTSpec,
)
from nabench.schemas.recipe import LabelsSpec, PublishSpec, RecipeHeader
from nabench.schemas.redux import AuditSpec

_SPECS = tuple(b.spec for b in BUILDERS.values() if b.spec is not None)
# One entry of `variants`: the spec of the builder its `kind` names.
VariantSpec = Annotated[Union[_SPECS], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007


class Recipe(RecipeHeader):
    kind: Literal["na"] = "na"
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


# The study's three training variants (standard, NA-keyed, NA as a distractor).
TrainVariantSpec = Annotated[
    OriginalSpec | NAKeyedSpec | NADistractorSpec, Field(discriminator="kind")
]


class NATrainRecipe(RecipeHeader):
    kind: Literal["na-train"]
    variants: list[TrainVariantSpec] = Field(min_length=1)
    labels: LabelsSpec = Field(default_factory=LabelsSpec)
    sampler: SamplerSpec = Field(default_factory=SamplerSpec)
    sft: SFTSpec = Field(default_factory=SFTSpec)
    dpo: DPOSpec = Field(default_factory=DPOSpec)
    decontamination: DecontaminationSpec = Field(default_factory=DecontaminationSpec)
    licence: LicenceSpec = Field(default_factory=LicenceSpec)
    publish: PublishSpec = Field(default_factory=PublishSpec)

    @field_validator("variants")
    @classmethod
    def _one_phrasing(cls, value: list[Any]) -> list[Any]:
        kinds = [v.kind for v in value]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"each variant kind at most once, got {kinds}")
        for v in value:
            if len(getattr(v, "na_texts", [None])) != 1:
                raise ValueError(f"{v.kind}: give exactly one NA phrasing for training data")
        return value

    @model_validator(mode="after")
    def _known_variants(self) -> NATrainRecipe:
        kinds = {v.kind for v in self.variants}
        if "original" not in kinds:
            raise ValueError("variants must include 'original' (the standard variant)")
        for section, names in (("sft", self.sft.variants), ("dpo", self.dpo.variants)):
            unknown = sorted(set(names) - kinds)
            if unknown:
                raise ValueError(f"{section}.variants {unknown} are not among the variants")
        if set(self.decontamination.splits) & set(self.source.splits):
            raise ValueError("a decontamination split is also a training split")
        return self
