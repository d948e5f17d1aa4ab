"""`na_mixed`: every item carries exactly one NA option, the key on a seeded 1/k of items.

Per item (seed, id) draws one option index uniformly over its k options and the NA text
replaces that option in place. Where the draw hits the gold option, NA is the key (the
gold text is gone); elsewhere NA replaced a distractor and the gold stays the key. So
NA is the key with probability exactly 1/k per item and, when it is not, the replaced
distractor is uniform over the distractors: "pick NA" scores 1/k, "never pick NA" gains
nothing over chance, and neither shortcut beats the majority baseline (WiCkeD, arXiv
2502.18316, mixes NA in the same way).
"""

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

__all__ = ["NAMixed", "NAMixedSpec", "mixed_indices"]

PURPOSE = "na_mixed"
DRAW = Draw(
    PURPOSE,
    "hash",
    "the replaced option is `H % len(choices)`; where it is the gold option NA is the key, "
    "the same in every NA phrasing's config",
)


class NAMixedSpec(_Spec):
    """NA replaces one option drawn per item; it is the key on a seeded 1/k of items."""

    kind: Literal["na_mixed"]
    na_texts: NATexts = na_texts_field()


def mixed_indices(items: ItemColumns, seed: int) -> np.ndarray:
    """The replaced option per item: uniform over all its options, independent of the NA
    phrasing (so phrasing configs differ only in the text)."""
    lengths = pc.list_value_length(items.choices).to_numpy(zero_copy_only=False).astype(np.int64)
    return item_choice_index(seed, items.ids, PURPOSE, lengths)


@dataclass(frozen=True)
class NAMixed(InsertsText):
    kind = "na_mixed"
    description = "NA replaces one option drawn per item: the gold (NA is key) on 1/k of items."
    spec = NAMixedSpec
    draws = (DRAW,)
    card_text = (
        "an NA phrasing replaces one option drawn per item: the gold on a seeded 1/k of items "
        "(NA is the key), a distractor elsewhere; neither 'pick NA' nor 'never pick NA' wins"
    )
    keeps_unreplaced = True
    rules = (
        Rule(
            "na_mixed_in_place",
            "`na_mixed`: NA replaces one option in place; the key stays in its slot",
            (PURPOSE,),
            lambda v: (v.answer != v.orig_answer) | v.differs(v.choices.at(v.replaced), v.na_text),
            lambda v, i: (
                f"the key must stay in the gold slot and replaced_index {v.replaced[i]} hold NA"
            ),
        ),
        Rule(
            "na_mixed_key_is_na_or_gold",
            "`na_mixed`: the key is NA where it replaced the gold, else the gold",
            (PURPOSE,),
            lambda v: np.where(
                v.replaced == v.orig_answer,
                v.differs(v.key_text, v.na_text) | (v.choices.count_equal(v.gold_text) > 0),
                v.differs(v.key_text, v.gold_text),
            ),
            lambda v, i: (
                f"key text is {show(v.key_text, i)}: NA where it replaced the gold, else the gold"
            ),
        ),
        draw_rule(PURPOSE, mixed_indices),
    )

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        replaced = mixed_indices(items, seed)
        return perturbed_table(
            items,
            variant=self.kind,
            choices=replace_at(items.choices, replaced, self.text),
            answer=items.answer,  # in place: the gold slot is the key either way
            replaced_index=replaced,
            na_text=self.text,
            seed=seed,
        )
