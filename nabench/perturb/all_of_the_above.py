"""`all_of_the_above`: "All of the above" appended as an extra option; never the key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
from pydantic import field_validator

from nabench.audit.patterns import text_reasons
from nabench.perturb._base import Builder, InsertedText, InsertsText
from nabench.perturb.rules import Rule, show
from nabench.schemas.columns import ItemColumns, append_to_lists, perturbed_table
from nabench.schemas.recipe import _Spec

DEFAULT_AOTA_TEXT = "All of the above"


class AllOfTheAboveSpec(_Spec):
    kind: Literal["all_of_the_above"]
    text: InsertedText = DEFAULT_AOTA_TEXT

    @field_validator("text")
    @classmethod
    def _not_na(cls, value: str) -> str:
        # an NA phrasing appended as a wrong option is an NA distractor under another name
        if "has_none_option" in text_reasons(value):
            raise ValueError(f"{value!r} is a None-of-the-above phrasing (use na_distractor)")
        return value


@dataclass(frozen=True)
class AllOfTheAbove(InsertsText):
    kind = "all_of_the_above"
    description = "'All of the above' appended as a fifth option; key unchanged."
    spec = AllOfTheAboveSpec
    cites = ("tam2025none",)
    card_text = (
        '"{text}" is appended as a new last option; the key is unchanged, so the '
        "appended option is always wrong"
    )
    inserted_reason = "has_all_option"
    rules = (
        Rule(
            "aota_appended",
            "`all_of_the_above`: the original options plus the text, last",
            ("all_of_the_above",),
            lambda v: (
                (v.choices.lengths != v.original.lengths + 1)
                | v.differs(v.choices.at(v.choices.lengths - 1), v.na_text)
                | ~v.prefix_ok
            ),
            lambda v, i: (
                f"expected the original choices plus {show(v.na_text, i)} as the last option"
            ),
        ),
        Rule(
            "aota_key_unchanged",
            "`all_of_the_above`: the key is unchanged",
            ("all_of_the_above",),
            lambda v: v.answer != v.orig_answer,
            lambda v, i: f"answer {v.answer[i]} != original answer {v.orig_answer[i]}",
        ),
    )
    text: str = DEFAULT_AOTA_TEXT

    @classmethod
    def from_spec(cls, spec: Any) -> list[Builder]:
        return [cls(text=spec.text)]  # one text, one config

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        return perturbed_table(
            items,
            variant=self.kind,
            choices=append_to_lists(items.choices, self.text),
            answer=items.answer,
            replaced_index=None,
            na_text=self.text,
            seed=seed,
        )
