"""`na_keyed_last`: the gold option is removed, the other options keep their order, and the
NA text is appended as the last option, which is the key (where test-writing guidelines put
"None of the above"; `na_keyed` keeps the NA study's in-place layout)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from nabench.perturb._base import InsertsText
from nabench.schemas.columns import ItemColumns, move_out_to_last, perturbed_table


@dataclass(frozen=True)
class NAKeyedLast(InsertsText):
    kind = "na_keyed_last"
    description = "Gold option removed, others in order, 'None of the above' last as the key."
    card_text = (
        "the gold option is removed, the other options keep their order and an NA phrasing "
        "is appended as the last option, which is the key (where test-writing guidelines put NA)"
    )

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        answers = items.answer
        lengths = pc.list_value_length(items.choices).to_numpy(zero_copy_only=False)
        return perturbed_table(
            items,
            variant=self.kind,
            choices=move_out_to_last(items.choices, answers, self.text),
            answer=lengths.astype("int64") - 1,
            replaced_index=answers,  # the gold option's former slot
            na_text=self.text,
            seed=seed,
        )
