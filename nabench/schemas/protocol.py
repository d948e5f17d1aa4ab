"""Named protocol presets: each paper's evaluation protocol as data (`protocols.yaml`).

A preset fixes what a paper fixed — decoding, prompt style, how text is laid out, how answers
are read and scored, which tables the report shows — so `--protocol NAME` on `build`, `eval`
and `report` reproduces it, and the card / run summary record the preset's name and content.
Commands read only the sections that concern them; a preset may leave any section out.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nabench.core.errors import NabenchError

PROTOCOLS_FILE = Path(__file__).with_name("protocols.yaml")
DEFAULT_PROTOCOL = "nabench"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DecodingPreset(_Spec):
    """How `eval` calls a model."""

    prompt: Literal["answer_only", "zero_shot_cot"] = "answer_only"
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    min_tokens: int = Field(default=0, ge=0)
    max_tokens: int = Field(default=16, ge=1)

    @model_validator(mode="after")
    def _range(self) -> DecodingPreset:
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens {self.min_tokens} > max_tokens {self.max_tokens}")
        return self


Confidence = Literal["renormalised_top_k", "selected_token_probability"]


class ScoringPreset(_Spec):
    """How an output becomes a score."""

    answer_rule: Literal["nabench", "authors_prefix"] = "nabench"
    answer_window: int = Field(default=4, ge=1, description="authors_prefix: chars searched")
    invalid_score: float = Field(default=0.0, ge=0.0, le=1.0)
    confidence: list[Confidence] = ["renormalised_top_k"]  # pydantic copies defaults


class ArtifactsPreset(_Spec):
    """How artifact prompts are laid out and how question inference treats gaps."""

    text: Literal["stripped", "raw"] = Field(
        default="stripped",
        description="`raw`: question and option text exactly as the source has them; "
        "`stripped`: surrounding whitespace removed (nabench's default).",
    )
    qi_keep_missing: bool = Field(
        default=False,
        description="Step 2 keeps items without an inferred question (one row per step-1 "
        "row); `nabench eval` never sends them and scores them as invalid answers.",
    )
    random_question_within: Literal["split", "subject"] = "split"
    qi_step1_min_tokens: int = Field(default=0, ge=0, description="Step 1: new tokens at least.")
    qi_step1_max_tokens: int = Field(default=96, ge=1, description="Step 1: new tokens at most.")


class SelfKnowPreset(_Spec):
    generation_temperature: float = Field(default=0.0, ge=0.0)
    classification_temperature: float = Field(default=0.0, ge=0.0)
    n_per_class: int | None = Field(
        default=None, ge=1, description="Tasks per class (None: the recipe's; --limit caps it)."
    )
    refill: bool = False
    max_refill_rounds: int = Field(default=0, ge=0)


PaperTableName = Literal[
    "discrimination_by_category_variant",
    "kr20_mean_sd_over_subjects",
    "anova_by_category",
    "accuracy_by_phrasing",
    "full_vs_na_filtered",
    "full_vs_na_filtered_subjects",
    "baseline_t_test",
    "qi_choices_only_kappa",
]  # computed by nabench.evaluation.paper_report.PAPER_TABLES


class ReportPreset(_Spec):
    tables: list[PaperTableName] = Field(default_factory=list)
    # The first grouping is the paper's: `tables/anova.csv` holds its ANOVA.
    categories: list[Literal["lm_eval", "hendrycks"]] = ["lm_eval"]  # pydantic copies defaults
    conditions: list[str] | None = Field(
        default=None,
        min_length=2,
        description="The configs the paper's Tables 1-2 and ANOVA compare, whatever else was "
        "evaluated (None: every evaluated multiple-choice config).",
    )
    # With a two-step question-inference config (`qi_step2`) among MMLU results, the paper
    # tables score every config on the first this-share of the source items, as the
    # artifacts authors' evaluation/plot_accuracy.py does (0.75); the baseline keeps all.
    mmlu_two_step_share: float | None = Field(default=None, gt=0.0, le=1.0)


SettingSource = Literal["paper text", "authors' code", "nabench's choice"]
_SECTIONS = ("decoding", "scoring", "artifacts", "selfknow", "report")


class Protocol(_Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str
    reference: str = ""
    applies_to: list[Literal["build", "eval", "report"]] = Field(min_length=1)
    decoding: DecodingPreset | None = None
    scoring: ScoringPreset | None = None
    artifacts: ArtifactsPreset | None = None
    selfknow: SelfKnowPreset | None = None
    report: ReportPreset | None = None
    # Where each setting comes from, `section.field` -> source; a paper preset names every
    # setting it states (a reader can tell the paper's numbers from nabench's fill-ins).
    sources: dict[str, SettingSource] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sources_name_settings(self) -> Protocol:
        for key in self.sources:
            section, _, name = key.partition(".")
            spec = getattr(self, section, None) if section in _SECTIONS else None
            if spec is None or name not in type(spec).model_fields:
                raise ValueError(f"sources: {key!r} names no setting of this preset")
        return self

    def record(self) -> dict[str, Any]:
        """What a card, manifest or run summary stores about the preset."""
        return self.model_dump(mode="json", exclude_none=True)


@cache
def protocols() -> dict[str, Protocol]:
    """The registry: every preset of `protocols.yaml`, by name."""
    data = yaml.safe_load(PROTOCOLS_FILE.read_text(encoding="utf-8")) or {}
    out: dict[str, Protocol] = {}
    for name, body in data.items():
        try:
            out[name] = Protocol.model_validate({"name": name, **body})
        except ValidationError as exc:  # a shipped preset is broken: say which field
            raise NabenchError(f"{PROTOCOLS_FILE.name}: preset {name!r}: {exc}") from None
    return out


def get_protocol(name: str | None) -> Protocol:
    """The preset called `name` (None: nabench's own defaults)."""
    registry = protocols()
    key = name or DEFAULT_PROTOCOL
    if key not in registry:
        raise NabenchError(f"unknown protocol {key!r} (known: {', '.join(sorted(registry))})")
    return registry[key]


def artifacts_preset(protocol: Protocol) -> ArtifactsPreset:
    return protocol.artifacts or ArtifactsPreset()
