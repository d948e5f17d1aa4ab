"""`na_keyed`: the gold option's text is replaced in place by the NA text, which becomes the key."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from nabench.perturb._base import DEFAULT_NA_TEXT, InsertsText
from nabench.schemas.columns import ItemColumns, perturbed_table, replace_at

__all__ = ["DEFAULT_NA_TEXT", "NAKeyed"]


@dataclass(frozen=True)
class NAKeyed(InsertsText):
    kind = "na_keyed"
    description = "Gold option replaced in place by 'None of the above'; NA is now the key."
    card_text = (
        "the gold option is replaced in place by an NA phrasing, which becomes the key: "
        "a model must recognise that none of the remaining options is correct"
    )

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
