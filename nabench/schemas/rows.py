"""Row models of the other published tables: labels, artifact prompts, self-knowledge tables.

Like `schemas.item`, each model is the one definition of its rows; `schemas.ROW_KINDS` names
them and `schemas.derive` turns them into Arrow and pandera schemas. Field order is column order.
"""

from __future__ import annotations

from pydantic import Field

from nabench.schemas.derive import RowModel, RowRule


class LabelRecord(RowModel):
    """One NA-applicability label. `na_applicable` is null when the output was invalid."""

    unique = ("id",)
    # An invalid label never carries a guessed value.
    row_rules = (
        RowRule(
            "invalid labels must have na_applicable = null",
            lambda r: bool(r["valid"]) or r["na_applicable"] is None,
        ),
    )

    id: str
    na_applicable: bool | None
    rule: str | None
    rationale: str | None
    model: str
    backend: str
    guideline_version: str
    prompt_sha256: str = Field(min_length=64, max_length=64)
    raw_output: str
    valid: bool
    attempts: int = Field(ge=1)


class ArtifactPrompt(RowModel):
    """One row of an artifact config: `id`, `prompt`, `target`, `stop` are what an evaluator
    needs, the rest trace the row to its source item and few-shot examples."""

    unique = ("id",)

    id: str = Field(description="Item id, or <item_id>#<choice_index> for individual prior.")
    item_id: str
    prompt_type: str = Field(description="The artifact config: full, choices_only, ...")
    prompt: str
    target: str | None = Field(description="Gold letter, True/False, or null (qi_step1).")
    stop: str
    fewshot_ids: list[str]
    choice_index: int | None = Field(ge=0, description="Option shown (individual prior).")
    source: str
    subject: str | None
    question: str
    choices: list[str]
    answer: int = Field(ge=0)
    seed: int


class InsertedQuestionPrompt(ArtifactPrompt):
    """A question-inference step-2 row (`qi_step2`, `qi_random_question`)."""

    inserted_question: str | None = Field(description="The question the test example shows.")
    inserted_from: str | None = Field(description="Id of the item the question comes from.")


class InferenceOutput(ArtifactPrompt):
    """A `qi_step1_outputs` row: the step-1 prompt and what the model wrote."""

    completion: str | None
    finish_reason: str | None
    inferred_question: str | None
    model_id: str | None
    error: str | None


class SelfknowTask(RowModel):
    """One kept generated task (the ``tasks`` config). ``reason`` is "" for feasible."""

    task_id: str
    slot_id: int
    task: str
    category: str
    type: str
    type_id: str
    reason: str
    reason_id: str
    prompt_style: str
    prompt_version: str
    taxonomy_version: str
    generator_model: str
    generator_backend: str
    temperature: float
    seed: int
    request_seed: int
    refill_round: int
    attempts: int
    analysis: str | None
    raw_output: str | None


class SelfknowQuarantine(RowModel):
    """A planned slot that yielded no kept task (the ``quarantine`` config);
    ``task``/``category``/``type``/``reason`` are what the model returned (null if nothing)."""

    task_id: str
    slot_id: int
    quarantine_reason: str
    quarantine_reasons: list[str]
    detail: str | None
    task: str | None
    category: str | None
    type: str | None
    reason: str | None
    planned_category: str | None
    planned_type: str | None
    planned_reason: str | None
    prompt_style: str | None
    prompt_version: str | None
    taxonomy_version: str | None
    generator_model: str | None
    generator_backend: str | None
    temperature: float | None
    seed: int | None
    request_seed: int | None
    refill_round: int | None
    attempts: int | None
    valid_json: bool | None
    error: str | None
    analysis: str | None
    raw_output: str | None


class SelfknowClassification(RowModel):
    """One classified task (the ``classifications`` config)."""

    task_id: str | None
    task: str | None
    prompt_style: str | None
    generator_model: str | None
    generated_class: str | None
    generated_type: str | None
    generated_reason: str | None
    classifier_model: str | None
    classifier_backend: str | None
    classifier_style: str | None
    cross_model: bool | None
    classified_class: str | None
    answer: str | None
    classified_reason: str | None
    classified_reason_id: str | None
    classified_type: str | None
    classified_type_id: str | None
    reason_known: bool | None
    reason_raw: str | None
    analysis: str | None
    valid: bool | None
    attempts: int | None
    error: str | None
    raw_output: str | None
    prompt_version: str | None
    taxonomy_version: str | None
    temperature: float | None
    request_seed: int | None
