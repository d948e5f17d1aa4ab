"""Recipe of kind `artifacts`: the MCQA artifact suite (choices-only, memorization,
individual-prior and question-inference prompt datasets) for one source."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from nabench.schemas.recipe import PublishSpec, RecipeHeader, _Spec, no_repeats

ArtifactPromptType = Literal[
    "full",
    "choices_only",
    "mem_no_choices",
    "mem_gold_choices",
    "mem_empty_choices",
    "prior_choice",
    "prior_choice_with_question",
    "qi_step1",
]
ALL_PROMPT_TYPES: list[ArtifactPromptType] = [
    "full",
    "choices_only",
    "mem_no_choices",
    "mem_gold_choices",
    "mem_empty_choices",
    "prior_choice",
    "prior_choice_with_question",
    "qi_step1",
]


class FewShotSpec(_Spec):
    """Where few-shot examples come from and how they are chosen.

    `same_subject`: the first `k` pool items of the test item's subject, in pool order
    (MMLU: the 5 dev examples). `random`: `k` pool items drawn per subject with an RNG seeded
    by (seed, dataset, subject). `exclude_eval_records`: drop pool items whose source record
    is also an evaluated item (GPQA, whose configs nest: diamond < main < extended).
    """

    split: str = Field(description="Pool split, e.g. `dev` (MMLU) or `train` (ARC, HellaSwag).")
    config: str | None = Field(default=None, description="Pool config; default: the source's.")
    k: int = Field(ge=0, le=64)
    protocol: Literal["same_subject", "random"]
    exclude_eval_records: bool = False
    note: str = Field(default="", description="Protocol note printed in the dataset card.")


class ArtifactsRecipe(RecipeHeader):
    kind: Literal["artifacts"]
    fewshot: FewShotSpec
    prompt_types: Annotated[
        list[ArtifactPromptType], AfterValidator(no_repeats("prompt_types"))
    ] = Field(default_factory=lambda: list(ALL_PROMPT_TYPES), min_length=1)
    publish: PublishSpec = Field(default_factory=PublishSpec)

    @model_validator(mode="after")
    def _pool_is_not_evaluated(self) -> ArtifactsRecipe:
        same_config = self.fewshot.config in (None, self.source.config)
        if same_config and self.fewshot.split in self.source.splits:
            raise ValueError(
                f"fewshot.split {self.fewshot.split!r} is also an evaluated split: "
                "few-shot examples must come from another split or config"
            )
        return self
