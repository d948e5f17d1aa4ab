"""Invariants of the variants that move or borrow the key: `na_keyed_last` (NA appended
last, the other options in order) and `foreign_key` (another item's gold text in place).

Each rule is (name, scope, broken-mask thunk, explanation), the shape `check_perturbed`
evaluates; scopes are the rows of one variant, so a config of another variant costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.arrow import ListColumn, as_bool_mask

Rule = tuple[str, np.ndarray, Callable[[], np.ndarray], Callable[[int], str]]
NA_KEYED_LAST = "na_keyed_last"
FOREIGN_KEY = "foreign_key"


@dataclass(frozen=True)
class RowView:
    """The columns of a perturbed table the placement rules read."""

    choices: ListColumn
    original: ListColumn
    answer: np.ndarray
    orig_answer: np.ndarray
    replaced: np.ndarray
    na_text: pa.Array
    variant: pa.Array

    def scope(self, name: str) -> np.ndarray:
        return as_bool_mask(pc.equal(self.variant, name))

    def equal(self, a: pa.Array, b: pa.Array) -> np.ndarray:
        return as_bool_mask(pc.equal(a, b))


def _norm(values: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.utf8_trim_whitespace(values))


def last_order_ok(v: RowView) -> np.ndarray:
    """Options 0..n-2 are the original options without the gold one, in their order."""
    ok = (v.choices.lengths == v.original.lengths) & (v.replaced == v.orig_answer)
    for j in range(max(v.choices.width - 1, 0)):
        inner = v.choices.lengths - 1 > j
        source_index = j + (j >= v.orig_answer).astype(np.int64)
        same = v.equal(v.choices.column(j), v.original.at(source_index))
        ok &= ~inner | same
    return ok


def others_unchanged(v: RowView) -> np.ndarray:
    """Every option but the key's slot is the original option at that position."""
    ok = v.choices.lengths == v.original.lengths
    for j in range(v.choices.width):
        present = v.choices.lengths > j
        same = v.equal(v.choices.column(j), v.original.column(j))
        ok &= ~present | (v.answer == j) | same
    return ok


def borrowed_is_foreign(v: RowView) -> np.ndarray:
    """The inserted text equals none of the item's own original options (stripped, case-folded)."""
    norm_flat = _norm(v.original.flat)
    target = _norm(v.na_text.fill_null(""))
    hit = np.zeros(len(v.answer), dtype=bool)
    for j in range(v.original.width):
        hit |= v.equal(v.original.column(j, norm_flat), target)
    return ~hit & as_bool_mask(pc.is_valid(v.na_text))


def placement_rules(v: RowView) -> list[Rule]:
    """The rules of `na_keyed_last` and `foreign_key`."""
    last, fk = v.scope(NA_KEYED_LAST), v.scope(FOREIGN_KEY)
    key = v.choices.at(v.answer)
    gold = v.original.at(v.orig_answer)

    def show(arr: pa.Array, i: int) -> str:
        return repr(arr[i].as_py())

    return [
        (
            "na_keyed_last_key_is_last_na",
            last,
            lambda: (v.answer != v.choices.lengths - 1) | ~v.equal(key, v.na_text),
            lambda i: f"key must be the last option holding {show(v.na_text, i)}",
        ),
        (
            "na_keyed_last_gold_absent",
            last,
            lambda: v.choices.count_equal(gold) > 0,
            lambda i: f"original gold text {show(gold, i)} is still among the choices",
        ),
        (
            "na_keyed_last_order_kept",
            last,
            lambda: ~last_order_ok(v),
            lambda i: "the options before NA must be the original non-gold options in order",
        ),
        (
            "foreign_key_in_place",
            fk,
            lambda: (
                (v.answer != v.orig_answer)
                | (v.replaced != v.orig_answer)
                | ~v.equal(key, v.na_text)
            ),
            lambda i: f"the gold slot must hold the inserted text {show(v.na_text, i)} as key",
        ),
        (
            "foreign_key_not_own_option",
            fk,
            lambda: ~borrowed_is_foreign(v),
            lambda i: f"inserted text {show(v.na_text, i)} is one of the item's own options",
        ),
        (
            "foreign_key_others_unchanged",
            fk,
            lambda: ~others_unchanged(v),
            lambda i: "an option other than the key differs from the original",
        ),
    ]
