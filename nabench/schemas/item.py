"""Row models: the canonical item every source maps to, and the rows nabench writes.

The pydantic models are the contract (exported as JSON Schema for contributors); the
Arrow/`datasets` features in `tables.py` are the same contract for parquet files.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nabench.schemas.contribution import ContributionHeader

ItemId = Annotated[
    str,
    Field(
        min_length=3,
        pattern=r"^[a-z0-9_]+(/[A-Za-z0-9_.\-]+)+$",
        description="Stable, traceable id, e.g. mmlu/all/test/00123.",
    ),
]


class Item(BaseModel):
    """One multiple-choice question exactly as its source has it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ItemId
    source: str = Field(description="Source benchmark: mmlu, arc_challenge, hellaswag, gpqa.")
    subject: str | None = Field(
        default=None, description="MMLU subject, HellaSwag activity label, GPQA subdomain."
    )
    question: str = Field(description="The question text (HellaSwag: the context).")
    choices: list[str] = Field(min_length=2, description="Options in source order.")
    answer: int = Field(ge=0, description="0-based index of the gold choice.")

    @model_validator(mode="after")
    def _answer_in_range(self) -> Item:
        if self.answer >= len(self.choices):
            raise ValueError(f"answer {self.answer} out of range for {len(self.choices)} choices")
        return self


class PerturbedItem(Item):
    """A row of a perturbed config: the new item plus everything needed to trace it back."""

    variant: str = Field(description="Builder that made the row: original, na_keyed, ...")
    original_answer: int = Field(ge=0, description="Gold index in the source item.")
    original_choices: list[str] = Field(min_length=2, description="Choices of the source item.")
    replaced_index: int | None = Field(
        default=None, ge=0, description="Index whose text was replaced (NA variants)."
    )
    na_text: str | None = Field(default=None, description="Inserted NA / All-of-the-above text.")
    seed: int = Field(description="Recipe seed; per-item RNG is seeded by (seed, id).")
    na_applicable: bool | None = Field(
        default=None, description="Label from the NA-applicability labeler; null if unlabeled."
    )
    labeler: str | None = Field(default=None, description="Labeler model, or null.")
    guideline_version: str | None = Field(default=None, description="Labeling guideline version.")

    @model_validator(mode="after")
    def _original_answer_in_range(self) -> PerturbedItem:
        if self.original_answer >= len(self.original_choices):
            raise ValueError("original_answer out of range for original_choices")
        return self


class ExcludedItem(BaseModel):
    """A source item that could not be perturbed, with the reason (never silently dropped)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ItemId
    source: str
    subject: str | None = None
    question: str
    choices: list[str]
    answer: int
    reason: str = Field(description="Primary reason code (first that applies).")
    reasons: list[str] = Field(description="Every reason code that applies.")


ROW_MODELS: dict[str, type[BaseModel]] = {
    "item": Item,
    "perturbed_item": PerturbedItem,
    "excluded_item": ExcludedItem,
    "contribution_header": ContributionHeader,
}
