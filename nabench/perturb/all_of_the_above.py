"""`all_of_the_above`: "All of the above" appended as an extra option; never the key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from nabench.perturb._base import Builder, InsertsText
from nabench.schemas.columns import ItemColumns, append_to_lists, perturbed_table

DEFAULT_AOTA_TEXT = "All of the above"


@dataclass(frozen=True)
class AllOfTheAbove(InsertsText):
    kind = "all_of_the_above"
    description = "'All of the above' appended as a fifth option; key unchanged."
    card_text = (
        '"All of the above" is appended as a new last option; the key is unchanged, so the '
        "appended option is always wrong"
    )
    inserted_reason = "has_all_option"
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
