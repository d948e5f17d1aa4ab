"""`na_distractor`: one distractor, drawn per item from (seed, id), is replaced by the NA text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.rng import Draw, item_choice_index
from nabench.perturb._base import InsertsText, NATexts, na_texts_field
from nabench.perturb.rules import Rule, draw_rule, show
from nabench.schemas.columns import ItemColumns, perturbed_table, replace_at
from nabench.schemas.recipe import _Spec

PURPOSE = "na_distractor"
DRAW = Draw(
    PURPOSE,
    "hash",
    "the replaced option is `d = H % (len(choices) - 1)` counted among the non-gold options "
    "(`d + 1` when `d >= answer`), the same in every NA phrasing's config",
)


class NADistractorSpec(_Spec):
    kind: Literal["na_distractor"]
    na_texts: NATexts = na_texts_field()


def distractor_indices(items: ItemColumns, seed: int) -> np.ndarray:
    """The replaced index per item: uniform over the non-gold options, independent of the
    NA phrasing (so phrasing configs differ only in the text)."""
    lengths = pc.list_value_length(items.choices).to_numpy(zero_copy_only=False).astype(np.int64)
    draw = item_choice_index(seed, items.ids, PURPOSE, lengths - 1)
    answer = items.answer
    # Index among the distractors -> index among all options (skip the gold one).
    return draw + (draw >= answer)


@dataclass(frozen=True)
class NADistractor(InsertsText):
    kind = "na_distractor"
    description = "One distractor replaced by 'None of the above'; key unchanged."
    spec = NADistractorSpec
    cites = ("tam2025none", "kadavath2022language")
    draws = (DRAW,)
    card_text = (
        "one distractor is replaced by an NA phrasing; the key is unchanged: a model must "
        "not pick NA when a correct option is present"
    )
    keeps_unreplaced = True
    rules = (
        Rule(
            "na_distractor_key_is_gold",
            "`na_distractor`: the key is still the original gold",
            (PURPOSE,),
            lambda v: v.differs(v.key_text, v.gold_text) | (v.answer != v.orig_answer),
            lambda v, i: (
                f"key text is {show(v.key_text, i)}, expected original gold {show(v.gold_text, i)}"
            ),
        ),
        Rule(
            "na_distractor_replaced_distractor",
            "`na_distractor`: NA replaced a distractor",
            (PURPOSE,),
            lambda v: (v.replaced == v.answer) | v.differs(v.choices.at(v.replaced), v.na_text),
            lambda v, i: (
                f"replaced_index {v.replaced[i]} must be a distractor now holding the NA text"
            ),
        ),
        draw_rule(PURPOSE, distractor_indices),
    )

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        replaced = distractor_indices(items, seed)
        return perturbed_table(
            items,
            variant=self.kind,
            choices=replace_at(items.choices, replaced, self.text),
            answer=items.answer,
            replaced_index=replaced,
            na_text=self.text,
            seed=seed,
        )
