"""`na_keyed_last`: the gold option is removed, the other options keep their order, and the
NA text is appended as the last option, which is the key (where test-writing guidelines put
"None of the above"; `na_keyed` keeps the NA study's in-place layout)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.perturb._base import InsertsText
from nabench.perturb.rules import Rows, Rule, gold_absent_rule, show
from nabench.schemas.columns import ItemColumns, move_out_to_last, perturbed_table

KIND = "na_keyed_last"


def last_order_ok(v: Rows) -> np.ndarray:
    """Options 0..n-2 are the original options without the gold one, in their order."""
    ok = (v.choices.lengths == v.original.lengths) & (v.replaced == v.orig_answer)
    for j in range(max(v.choices.width - 1, 0)):
        inner = v.choices.lengths - 1 > j
        source_index = j + (j >= v.orig_answer).astype(np.int64)
        same = v.equal(v.choices.column(j), v.original.at(source_index))
        ok &= ~inner | same
    return ok


@dataclass(frozen=True)
class NAKeyedLast(InsertsText):
    kind = KIND
    spec = None  # `na_keyed` with `position: last`
    cites = ("tam2025none",)
    description = "Gold option removed, others in order, 'None of the above' last as the key."
    card_text = (
        "the gold option is removed, the other options keep their order and an NA phrasing "
        "is appended as the last option, which is the key (where test-writing guidelines put NA)"
    )
    rules = (
        Rule(
            "na_keyed_last_key_is_last_na",
            "`na_keyed_last`: the key is the NA text, last",
            (KIND,),
            lambda v: (v.answer != v.choices.lengths - 1) | ~v.equal(v.key_text, v.na_text),
            lambda v, i: f"key must be the last option holding {show(v.na_text, i)}",
        ),
        gold_absent_rule(KIND),
        Rule(
            "na_keyed_last_order_kept",
            "`na_keyed_last`: the other options keep their order",
            (KIND,),
            lambda v: ~last_order_ok(v),
            lambda v, i: "the options before NA must be the original non-gold options in order",
        ),
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
