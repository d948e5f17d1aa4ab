"""MCQA artifact suite: prompt datasets that probe what a model answers from.

One module per prompt family (`full`, `choices_only`, `memorization`, `individual_prior`,
`question_inference`); shared layout and few-shot helpers live in private modules.
`PROMPT_TYPES` maps each output config name to its prompt type; `build_prompt_tables` builds
any subset of them from canonical item tables.
"""

from __future__ import annotations

import pyarrow as pa

from nabench.perturb.artifacts._fewshot import (
    Protocol,
    draw_without_replacement,
    plan_fewshot,
    prior_examples,
)
from nabench.perturb.artifacts._layout import (
    ARTIFACT_ARROW,
    LETTERS,
    FewShotPlan,
    Items,
    LetterPrompt,
    PromptType,
    TextMode,
    option_block,
)
from nabench.perturb.artifacts.choices_only import ChoicesOnly
from nabench.perturb.artifacts.full import Full
from nabench.perturb.artifacts.individual_prior import PriorChoice, PriorChoiceWithQuestion
from nabench.perturb.artifacts.memorization import MemEmptyChoices, MemGoldChoices, MemNoChoices
from nabench.perturb.artifacts.question_inference import (
    STEP2_EXTRA,
    QIStep1,
    extract_inferred_question,
    replace_test_question,
    seeded_derangement,
)

PROMPT_TYPES: dict[str, PromptType] = {
    p.config_name: p
    for p in (
        Full(),
        ChoicesOnly(),
        MemNoChoices(),
        MemGoldChoices(),
        MemEmptyChoices(),
        PriorChoice(),
        PriorChoiceWithQuestion(),
        QIStep1(),
    )
}
# Built by the two-step pipeline after a model ran `qi_step1`.
PIPELINE_CONFIGS = ("qi_step2", "qi_random_question", "qi_step1_outputs")


def get_prompt_type(name: str) -> PromptType:
    try:
        return PROMPT_TYPES[name]
    except KeyError:
        known = ", ".join(PROMPT_TYPES)
        raise KeyError(f"unknown artifact prompt type {name!r} (known: {known})") from None


def build_prompt_tables(
    test: pa.Table,
    pool: pa.Table,
    *,
    prompt_types: list[str],
    protocol: Protocol,
    k: int,
    seed: int,
    dataset: str,
    text: TextMode = "stripped",
) -> dict[str, pa.Table]:
    """Every requested config for canonical `test` items with examples from `pool`."""
    test_items, pool_items = Items.from_table(test, text), Items.from_table(pool, text)
    plan = plan_fewshot(test_items, pool_items, protocol=protocol, k=k, seed=seed, dataset=dataset)
    return {
        name: get_prompt_type(name).build(test_items, pool_items, plan, seed)
        for name in prompt_types
    }


__all__ = [
    "ARTIFACT_ARROW",
    "LETTERS",
    "PIPELINE_CONFIGS",
    "PROMPT_TYPES",
    "STEP2_EXTRA",
    "ChoicesOnly",
    "FewShotPlan",
    "Full",
    "Items",
    "LetterPrompt",
    "MemEmptyChoices",
    "MemGoldChoices",
    "MemNoChoices",
    "PriorChoice",
    "PriorChoiceWithQuestion",
    "PromptType",
    "Protocol",
    "QIStep1",
    "TextMode",
    "build_prompt_tables",
    "draw_without_replacement",
    "extract_inferred_question",
    "get_prompt_type",
    "option_block",
    "plan_fewshot",
    "prior_examples",
    "replace_test_question",
    "seeded_derangement",
]
