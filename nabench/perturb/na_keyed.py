"""`na_keyed`: the gold option's text is replaced in place by the NA text, which becomes the key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field

from nabench.perturb._base import DEFAULT_NA_TEXT, Builder, InsertsText, NATexts, na_texts_field
from nabench.perturb.na_keyed_last import NAKeyedLast
from nabench.perturb.rules import Rule, gold_absent_rule, show
from nabench.schemas.columns import ItemColumns, perturbed_table, replace_at
from nabench.schemas.recipe import _Spec

__all__ = ["DEFAULT_NA_TEXT", "NAKeyed", "NAKeyedSpec"]


class NAKeyedSpec(_Spec):
    kind: Literal["na_keyed"]
    na_texts: NATexts = na_texts_field()
    position: Literal["in_place", "last"] = Field(
        default="in_place",
        description="`in_place`: NA takes the gold option's slot (the NA study); `last`: the "
        "gold option is removed, the others keep their order and NA is the last option "
        "(test-writing guidelines). `last` configs are named `na_keyed_last`.",
    )


@dataclass(frozen=True)
class NAKeyed(InsertsText):
    kind = "na_keyed"
    description = "Gold option replaced in place by 'None of the above'; NA is now the key."
    spec = NAKeyedSpec
    cites = ("tam2025none", "kadavath2022language")
    card_text = (
        "the gold option is replaced in place by an NA phrasing, which becomes the key: "
        "a model must recognise that none of the remaining options is correct"
    )
    keeps_unreplaced = True
    rules = (
        Rule(
            "na_keyed_key_is_na",
            "`na_keyed`: the key is the NA text",
            ("na_keyed",),
            lambda v: v.differs(v.key_text, v.na_text),
            lambda v, i: f"key text is {show(v.key_text, i)}, expected {show(v.na_text, i)}",
        ),
        gold_absent_rule("na_keyed"),
        Rule(
            "na_keyed_in_place",
            "`na_keyed`: NA replaces the gold option in place",
            ("na_keyed",),
            lambda v: (v.replaced != v.orig_answer) | (v.answer != v.orig_answer),
            lambda v, i: "NA must replace the gold option in place",
        ),
    )

    @classmethod
    def from_spec(cls, spec: Any) -> list[Builder]:
        """`position: last` asks for `na_keyed_last` configs instead."""
        if spec.position == "last":
            return NAKeyedLast.from_spec(spec)
        return super().from_spec(spec)

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        answers = items.answer
        return perturbed_table(
            items,
            variant=self.kind,
            choices=replace_at(items.choices, answers, self.text),
            answer=answers,
            replaced_index=answers,
            na_text=self.text,
            seed=seed,
        )
