"""Row models of the NA build: the canonical item every source maps to, the perturbed row,
the excluded row.

The pydantic models are the one definition (exported as JSON Schema for contributors); the
Arrow schema and the pandera schema of each are derived from them (`schemas.derive`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from nabench.schemas.derive import RowModel

ItemId = Annotated[
    str,
    Field(
        min_length=3,
        # ARC ids hold "&" and "+" (e.g. AKDE&ED_2008_4_36)
        pattern=r"^[a-z0-9_]+(/[A-Za-z0-9_.&+\-]+)+$",
        description="Stable, traceable id, e.g. mmlu/all/test/00123.",
    ),
]


class Item(RowModel):
    """One multiple-choice question exactly as its source has it."""

    unique = ("id",)

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


class ExcludedItem(RowModel):
    """A source item that could not be perturbed, with the reason (never silently dropped).

    The item is kept as the source has it (malformed rows included), so `question`,
    `choices` and `answer` may be missing and ids may repeat."""

    id: ItemId
    source: str
    subject: str | None = None
    question: str | None
    choices: list[str | None] | None  # null elements: quarantined as empty_choice
    answer: int | None
    reason: str = Field(description="Primary reason code (first that applies).")
    reasons: list[str] = Field(description="Every reason code that applies.")
