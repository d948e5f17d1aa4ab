"""`na_distractor`: one distractor, drawn per item from (seed, id), is replaced by the NA text."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.rng import Draw, item_choice_index
from nabench.perturb._base import InsertsText
from nabench.schemas.columns import ItemColumns, perturbed_table, replace_at

PURPOSE = "na_distractor"
DRAW = Draw(
    PURPOSE,
    "hash",
    "the replaced option is `d = H % (len(choices) - 1)` counted among the non-gold options "
    "(`d + 1` when `d >= answer`), the same in every NA phrasing's config",
)


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
    draws = (DRAW,)
    card_text = (
        "one distractor is replaced by an NA phrasing; the key is unchanged: a model must "
        "not pick NA when a correct option is present"
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
