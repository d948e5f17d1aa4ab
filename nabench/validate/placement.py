"""Invariants of the variants that move or borrow the key: `na_keyed_last` (NA appended
last, the other options in order) and `foreign_key` (another item's gold text in place).

Each is a `Rule` record (`validate.rows`) scoped to the rows of its variant, so a config of
another variant costs nothing.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.arrow import as_bool_mask
from nabench.validate.rows import FOREIGN_KEY, NA_KEYED_LAST, Rows, Rule, show

__all__ = ["FOREIGN_KEY", "NA_KEYED_LAST", "PLACEMENT_RULES"]


def _norm(values: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.utf8_trim_whitespace(values))


def last_order_ok(v: Rows) -> np.ndarray:
    """Options 0..n-2 are the original options without the gold one, in their order."""
    ok = (v.choices.lengths == v.original.lengths) & (v.replaced == v.orig_answer)
    for j in range(max(v.choices.width - 1, 0)):
        inner = v.choices.lengths - 1 > j
        source_index = j + (j >= v.orig_answer).astype(np.int64)
        same = v.equal(v.choices.column(j), v.original.at(source_index))
        ok &= ~inner | same
    return ok


def others_unchanged(v: Rows) -> np.ndarray:
    """Every option but the key's slot is the original option at that position."""
    ok = v.choices.lengths == v.original.lengths
    for j in range(v.choices.width):
        present = v.choices.lengths > j
        same = v.equal(v.choices.column(j), v.original.column(j))
        ok &= ~present | (v.answer == j) | same
    return ok


def borrowed_is_foreign(v: Rows) -> np.ndarray:
    """The inserted text equals none of the item's own original options (stripped, case-folded)."""
    norm_flat = _norm(v.original.flat)
    target = _norm(v.na_text.fill_null(""))
    hit = np.zeros(v.n, dtype=bool)
    for j in range(v.original.width):
        hit |= v.equal(v.original.column(j, norm_flat), target)
    return ~hit & as_bool_mask(pc.is_valid(v.na_text))


def gold_absent_rule(variant: str) -> Rule:
    """`<variant>_gold_absent`: the original gold text is gone (every NA-keyed placement)."""
    return Rule(
        f"{variant}_gold_absent",
        f"`{variant}`: the original gold text is gone",
        (variant,),
        lambda v: v.choices.count_equal(v.gold_text) > 0,
        lambda v, i: f"original gold text {show(v.gold_text, i)} is still among the choices",
    )


_LAST, _FK = (NA_KEYED_LAST,), (FOREIGN_KEY,)
PLACEMENT_RULES: tuple[Rule, ...] = (
    Rule(
        "na_keyed_last_key_is_last_na",
        "`na_keyed_last`: the key is the NA text, last",
        _LAST,
        lambda v: (v.answer != v.choices.lengths - 1) | ~v.equal(v.key_text, v.na_text),
        lambda v, i: f"key must be the last option holding {show(v.na_text, i)}",
    ),
    gold_absent_rule(NA_KEYED_LAST),
    Rule(
        "na_keyed_last_order_kept",
        "`na_keyed_last`: the other options keep their order",
        _LAST,
        lambda v: ~last_order_ok(v),
        lambda v, i: "the options before NA must be the original non-gold options in order",
    ),
    Rule(
        "foreign_key_in_place",
        "`foreign_key`: the borrowed text replaces the gold in place, as key",
        _FK,
        lambda v: (
            (v.answer != v.orig_answer)
            | (v.replaced != v.orig_answer)
            | ~v.equal(v.key_text, v.na_text)
        ),
        lambda v, i: f"the gold slot must hold the inserted text {show(v.na_text, i)} as key",
    ),
    Rule(
        "foreign_key_not_own_option",
        "`foreign_key`: the borrowed text is none of the own options",
        _FK,
        lambda v: ~borrowed_is_foreign(v),
        lambda v, i: f"inserted text {show(v.na_text, i)} is one of the item's own options",
    ),
    Rule(
        "foreign_key_others_unchanged",
        "`foreign_key`: every other option is unchanged",
        _FK,
        lambda v: ~others_unchanged(v),
        lambda v, i: "an option other than the key differs from the original",
    ),
)
