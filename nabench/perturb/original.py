"""`original`: the eligible items unchanged, the control condition with the same ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from nabench.perturb._base import Builder
from nabench.perturb.rules import Rule
from nabench.schemas.columns import ItemColumns, perturbed_table
from nabench.schemas.recipe import _Spec


class OriginalSpec(_Spec):
    kind: Literal["original"]


@dataclass(frozen=True)
class Original(Builder):
    kind = "original"
    description = "The eligible source items, unchanged (control condition)."
    spec = OriginalSpec
    card_text = "the source items, unchanged, as the baseline"
    inserted_reason = None
    inserts_once = False
    rules = (
        Rule(
            "original_unchanged",
            "`original` rows equal their source rows",
            ("original",),
            lambda v: ~(v.same_len & v.prefix_ok) | (v.answer != v.orig_answer) | v.holds_insertion,
            lambda v, i: (
                "original row differs from its source choices/answer, or names an inserted "
                "text or a replaced option"
            ),
        ),
    )

    @property
    def config_name(self) -> str:
        return "original"

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        return perturbed_table(
            items,
            variant=self.kind,
            choices=items.choices,
            answer=items.answer,
            replaced_index=None,
            na_text=None,
            seed=seed,
        )
