"""Versioned prompt templates (``prompts.yaml``) and the JSON schemas of the self-knowledge study.

Two prompt styles, for generation and classification alike:

* ``vanilla``: a plain instruction;
* ``challenge``: an incentive framing plus question-analysis prompting: the model is told to
  analyse the request first, and the schema has an ``analysis`` string. Constrained decoders
  emit keys in schema order, and :class:`~nabench.llm.ChatRequest` stores schemas with sorted
  keys, so ``analysis`` (alphabetically first in both schemas) really is written first.

The schemas deliberately leave ``type`` and ``reason`` as free strings (only the class is an
enum): the pipeline checks them against the taxonomy itself (aliases tolerated) so that a
model that names an unknown reason is *seen* doing so (generation: quarantined; classification:
kept and counted) instead of being silently forced onto a taxonomy name by the decoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import yaml

from nabench.core.errors import NabenchError
from nabench.selfknow.taxonomy import Reason, SelfKnowledgeType, Taxonomy

Style = Literal["vanilla", "challenge"]
STYLES: tuple[Style, ...] = ("vanilla", "challenge")
CLASSES: tuple[str, ...] = ("feasible", "infeasible")

MAX_LABEL_CHARS = 48
"""Upper bound on the length of the free-text ``type`` and ``reason`` fields."""


@dataclass(frozen=True)
class PromptSet:
    """The parsed ``prompts.yaml``: every template, keyed as in the file."""

    version: str
    data: dict[str, Any]

    def text(self, *path: str) -> str:
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict) or key not in node:
                raise NabenchError(f"prompts {self.version}: missing template {'.'.join(path)}")
            node = node[key]
        if not isinstance(node, str):
            raise NabenchError(f"prompts {self.version}: {'.'.join(path)} is not a string")
        return node


def _parse(data: object, origin: str) -> PromptSet:
    if not isinstance(data, dict):
        raise NabenchError(f"{origin}: prompts must be a YAML mapping")
    version = data.get("version")
    if not isinstance(version, str) or not version:
        raise NabenchError(f"{origin}: prompts need a non-empty string 'version'")
    prompts = PromptSet(version=version, data=data)
    for style in STYLES:  # fail early on a missing template
        prompts.text("generation", style, "single")
        prompts.text("generation", style, "batch")
        prompts.text("classification", style)
    return prompts


@cache
def _bundled() -> PromptSet:
    text = files("nabench.selfknow").joinpath("prompts.yaml").read_text(encoding="utf-8")
    return _parse(yaml.safe_load(text), "nabench/selfknow/prompts.yaml")


def load_prompts(path: str | Path | None = None) -> PromptSet:
    """The prompts bundled with nabench, or those in the YAML file ``path``."""
    if path is None:
        return _bundled()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise NabenchError(f"cannot read prompts {path}: {exc}") from exc
    return _parse(data, str(path))


# -- schemas -------------------------------------------------------------------------------


def _item_schema(max_task_chars: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": list(CLASSES)},
            "type": {"type": "string", "maxLength": MAX_LABEL_CHARS},
            "reason": {"type": "string", "maxLength": MAX_LABEL_CHARS},
            "task": {"type": "string", "maxLength": max_task_chars},
        },
        "required": ["category", "type", "reason", "task"],
        "additionalProperties": False,
    }


def _with_analysis(schema: dict[str, Any], style: Style, max_analysis_chars: int) -> dict[str, Any]:
    if style != "challenge":
        return schema
    return {
        **schema,
        "properties": {
            "analysis": {"type": "string", "maxLength": max_analysis_chars},
            **schema["properties"],
        },
        "required": ["analysis", *schema["required"]],
    }


def generation_schema(
    style: Style, max_task_chars: int, max_analysis_chars: int, batch_size: int = 1
) -> dict[str, Any]:
    """Schema of one generated task (``batch_size`` 1) or of ``{"tasks": [...]}`` (1 to
    ``batch_size`` tasks). A batch of one is asked for, and answered, as a single task."""
    item = _item_schema(max_task_chars)
    if batch_size == 1:
        return _with_analysis(item, style, max_analysis_chars)
    batch = {
        "type": "object",
        "properties": {
            "tasks": {"type": "array", "items": item, "minItems": 1, "maxItems": batch_size}
        },
        "required": ["tasks"],
        "additionalProperties": False,
    }
    return _with_analysis(batch, style, max_analysis_chars)


def classification_schema(
    style: Style, max_answer_chars: int, max_analysis_chars: int
) -> dict[str, Any]:
    """Schema of one classification verdict: ``task_class``, ``answer``, ``reason``."""
    schema = {
        "type": "object",
        "properties": {
            "task_class": {"type": "string", "enum": list(CLASSES)},
            "answer": {"type": "string", "maxLength": max_answer_chars},
            "reason": {"type": "string", "maxLength": MAX_LABEL_CHARS},
        },
        "required": ["task_class", "answer", "reason"],
        "additionalProperties": False,
    }
    return _with_analysis(schema, style, max_analysis_chars)


# -- rendering -----------------------------------------------------------------------------


def _oneline(text: str) -> str:
    return " ".join(text.split())


def slot_brief(
    prompts: PromptSet, category: str, sk_type: SelfKnowledgeType, reason: Reason | None
) -> str:
    """The sentence that says what kind of task one planned slot needs."""
    if category == "feasible":
        template = prompts.text("generation", "feasible_brief")
    else:
        template = prompts.text("generation", "infeasible_brief")
    return _oneline(
        template.format(
            type_name=sk_type.name,
            type_description=_oneline(sk_type.description),
            near_boundary=_oneline(sk_type.near_boundary_feasible),
            reason_name=reason.name if reason else "",
            reason_description=_oneline(reason.description) if reason else "",
        )
    )


@dataclass(frozen=True)
class SlotText:
    """What a generation prompt says about one slot."""

    category: str
    sk_type: SelfKnowledgeType
    reason: Reason | None
    index: int
    count: int


def generation_prompt(prompts: PromptSet, style: Style, slots: Sequence[SlotText]) -> str:
    """The user message asking for the task(s) of ``slots`` (one slot, or a batch)."""
    no_reason = prompts.text("generation", "no_reason")
    if len(slots) == 1:
        slot = slots[0]
        return prompts.text("generation", style, "single").format(
            category=slot.category,
            type_name=slot.sk_type.name,
            reason_name=slot.reason.name if slot.reason else no_reason,
            index=slot.index,
            count=slot.count,
            brief=slot_brief(prompts, slot.category, slot.sk_type, slot.reason),
        )
    lines = [
        prompts.text("generation", "batch_line").format(
            number=number,
            category=slot.category,
            type_name=slot.sk_type.name,
            reason_name=slot.reason.name if slot.reason else no_reason,
            brief=slot_brief(prompts, slot.category, slot.sk_type, slot.reason),
        )
        + f" (task {slot.index} of {slot.count} of this kind)"
        for number, slot in enumerate(slots, start=1)
    ]
    return prompts.text("generation", style, "batch").format(
        count=len(slots), batch_list="\n".join(lines)
    )


def reasons_list(prompts: PromptSet, taxonomy: Taxonomy) -> str:
    """Every reason of the taxonomy, one line each, as shown to the classifier."""
    template = prompts.text("classification", "reasons_line")
    return "\n".join(
        template.format(
            reason_name=reason.name,
            type_name=taxonomy.type_by_id(reason.type_id).name,
            reason_description=_oneline(reason.description),
        )
        for reason in taxonomy.reasons
    )


def classification_prompt(prompts: PromptSet, style: Style, task: str, reasons: str) -> str:
    """The user message asking the model to classify (and answer or refuse) ``task``."""
    return prompts.text("classification", style).format(task=task, reasons_list=reasons)
