"""`foreign_key`: the NA study's ablation control. The gold option's text is replaced in
place by the gold text of another item of the same subject, which becomes the key; if the
NA-keyed drop is about NA semantics, this replacement should cost much less.

The donor is drawn per item from (seed, "foreign_key", id) among the donor pool (the whole
audited split, so `--limit` / `--sample` builds borrow what the full build does). A donor
whose gold text equals any of the item's own options (normalised as the audit does, case-folded) is
skipped. The borrowed text is recorded in `na_text` (the inserted text).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.audit.patterns import normalise_text
from nabench.core.arrow import as_bool_mask
from nabench.core.errors import NabenchError
from nabench.core.rng import Draw, item_rng
from nabench.perturb._base import Builder
from nabench.perturb.rules import Rows, Rule, show
from nabench.schemas.columns import ItemColumns, perturbed_table, replace_each
from nabench.schemas.recipe import _Spec

PURPOSE = "foreign_key"
RANDOM_TRIES = 32  # then a seeded full scan of the subject's pool
DRAW = Draw(
    PURPOSE,
    "random",
    "the donor is `pool[rng.randrange(len(pool))]`, `pool` the same-subject gold texts of the "
    f"audited split in source order, redrawn up to {RANDOM_TRIES} times while it is the item "
    "itself or equals one of its options, then the first usable one scanning on from "
    "`rng.randrange(len(pool))`",
)


class ForeignKeySpec(_Spec):
    """The NA study's ablation control: the gold text replaced in place by another item's
    gold text (same subject), which is the key."""

    kind: Literal["foreign_key"]


def _norm(text: str) -> str:
    # the audit's comparison text (NFKC, zero-width removed, whitespace collapsed), case-folded
    return normalise_text(text).casefold()


@dataclass(frozen=True)
class DonorPool:
    """Gold texts of the pool items, grouped by subject (in pool order)."""

    by_subject: dict[str, list[tuple[str, str]]]  # subject -> [(id, gold text)]

    @classmethod
    def from_table(cls, table: pa.Table) -> DonorPool:
        groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
        rows = zip(
            table.column("id").to_pylist(),
            table.column("subject").to_pylist(),
            table.column("choices").to_pylist(),
            table.column("answer").to_pylist(),
            strict=True,
        )
        for item_id, subject, choices, answer in rows:
            groups[subject or ""].append((item_id, choices[answer]))
        return cls(dict(groups))

    def draw(self, seed: int, item_id: str, subject: str | None, own: Sequence[str]) -> str:
        """The borrowed gold text for one item (never one of its own options)."""
        candidates = self.by_subject.get(subject or "", [])
        taken = {_norm(c) for c in own}

        def usable(k: int) -> bool:
            donor_id, text = candidates[k]
            return donor_id != item_id and _norm(text) not in taken

        if candidates:
            rng = item_rng(seed, item_id, PURPOSE)
            for _ in range(RANDOM_TRIES):
                k = rng.randrange(len(candidates))
                if usable(k):
                    return candidates[k][1]
            start = rng.randrange(len(candidates))
            for step in range(len(candidates)):
                k = (start + step) % len(candidates)
                if usable(k):
                    return candidates[k][1]
        raise NabenchError(
            f"foreign_key: no other item of subject {subject!r} has a gold text that differs "
            f"from every option of {item_id}"
        )


def _norm_column(values: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.utf8_trim_whitespace(values))


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
    norm_flat = _norm_column(v.original.flat)
    target = _norm_column(v.na_text.fill_null(""))
    hit = np.zeros(v.n, dtype=bool)
    for j in range(v.original.width):
        hit |= v.equal(v.original.column(j, norm_flat), target)
    return ~hit & as_bool_mask(pc.is_valid(v.na_text))


_FK = (PURPOSE,)


@dataclass(frozen=True)
class ForeignKey(Builder):
    kind = "foreign_key"
    description = "Gold option replaced in place by another same-subject item's gold text (key)."
    spec = ForeignKeySpec
    cites = ("tam2025none",)
    draws = (DRAW,)
    card_text = (
        "the ablation control of the NA study: the gold option is replaced in place by the gold "
        "text of another item of the same subject, which becomes the key; the drop it causes "
        "separates NA semantics from 'any replacement of the gold text'"
    )
    inserted_reason = None  # another item's ordinary gold text, not a phrasing
    rules = (
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

    @property
    def config_name(self) -> str:
        return self.kind

    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        pool = DonorPool.from_table(items.donors if items.donors is not None else items.table)
        t = items.table
        rows = zip(
            t.column("id").to_pylist(),
            t.column("subject").to_pylist(),
            t.column("choices").to_pylist(),
            strict=True,
        )
        texts = pa.array([pool.draw(seed, i, s, cs) for i, s, cs in rows], pa.string())
        answers = items.answer
        return perturbed_table(
            items,
            variant=self.kind,
            choices=replace_each(items.choices, answers, texts),
            answer=answers,
            replaced_index=answers,
            na_text=texts,
            seed=seed,
        )
