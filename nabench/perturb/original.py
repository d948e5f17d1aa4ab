"""`original`: the eligible items unchanged, the control condition with the same ids."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from nabench.perturb._base import Builder
from nabench.schemas.columns import ItemColumns, perturbed_table


@dataclass(frozen=True)
class Original(Builder):
    kind = "original"
    description = "The eligible source items, unchanged (control condition)."
    card_text = "the source items, unchanged, as the baseline"

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
