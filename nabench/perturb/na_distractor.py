"""`na_distractor`: one distractor, drawn by the per-item RNG, is replaced by the NA text."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from nabench.perturb._base import Builder
from nabench.perturb._columns import ItemColumns, perturbed_table
from nabench.perturb.na_keyed import DEFAULT_NA_TEXT
from nabench.perturb.rng import item_rng


def distractor_indices(items: ItemColumns, seed: int) -> list[int]:
    """The replaced index per item; independent of the NA phrasing so phrasings are comparable."""
    out = []
    for item_id, c, a in zip(items.ids, items.choices, items.answer.tolist(), strict=True):
        candidates = [i for i in range(len(c)) if i != a]
        out.append(item_rng(seed, item_id, "na_distractor").choice(candidates))
    return out


@dataclass(frozen=True)
class NADistractor(Builder):
    kind = "na_distractor"
    description = "One distractor replaced by 'None of the above'; key unchanged."
    na_text: str = DEFAULT_NA_TEXT
    name: str | None = None

    @property
    def config_name(self) -> str:
        return self.name or self.kind

    @property
    def inserted_texts(self) -> tuple[str, ...]:
        return (self.na_text,)

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        replaced = distractor_indices(items, seed)
        choices = [
            [*c[:r], self.na_text, *c[r + 1 :]]
            for c, r in zip(items.choices, replaced, strict=True)
        ]
        return perturbed_table(
            items,
            variant=self.kind,
            choices=choices,
            answer=items.answer,
            replaced_index=replaced,
            na_text=self.na_text,
            seed=seed,
        )
