"""The rule record every row invariant of a perturbed config is written as, and the view of
a table the rules read (columns decoded once, shared masks computed on first use).

A rule is (name, description, the variants it applies to, broken-mask, explanation). Each
builder carries the rules of its own rows (`Builder.rules`, in its file); the rules of every
row are in `validate.invariants`. The build and `nabench validate` evaluate the same records,
and a card lists the records that ran on its build (`Rule.description` is the card's text),
so no rule list is copied by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.audit.patterns import any_flagged, normalise
from nabench.core.arrow import ListColumn, as_bool_mask
from nabench.schemas.columns import ItemColumns

# Item fields a perturbed row copies from its source row (`original_answer` is `answer` there).
TRACED = ("source", "subject", "question", "original_answer")


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).fill_null(-1).to_numpy().astype(np.int64)


def _strings(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks().cast(pa.string())


def config_variant(config: str) -> str:
    """The variant a config's rows carry: its name before any `__<phrasing>` suffix."""
    return config.split("__", 1)[0]


@dataclass(eq=False)
class Rows:
    """A perturbed table as the rules see it. `config` is the config the table was staged or
    found in (None for a lone file), `source` the `original` config of its split (None when
    the build has none, or for a lone file), `extra_na_texts` the build's inserted texts,
    `plain_text_variants` the variants whose `na_text` is an ordinary option text, not a
    phrasing to look for in other options (`Builder.inserted_reason` None), `seed` the
    build's seed (build.json; None for a lone file)."""

    table: pa.Table
    plain_text_variants: frozenset[str]
    config: str | None = None
    source: pa.Table | None = None
    extra_na_texts: tuple[str, ...] = ()
    seed: int | None = None

    @cached_property
    def n(self) -> int:
        return int(self.table.num_rows)

    @cached_property
    def ids(self) -> pa.Array:
        return _strings(self.table, "id")

    @cached_property
    def choices(self) -> ListColumn:
        return ListColumn(self.table.column("choices"))

    @cached_property
    def original(self) -> ListColumn:
        return ListColumn(self.table.column("original_choices"))

    @cached_property
    def answer(self) -> np.ndarray:
        return _ints(self.table, "answer")

    @cached_property
    def orig_answer(self) -> np.ndarray:
        return _ints(self.table, "original_answer")

    @cached_property
    def replaced(self) -> np.ndarray:
        return _ints(self.table, "replaced_index")

    @cached_property
    def row_seed(self) -> np.ndarray:
        return _ints(self.table, "seed")

    @cached_property
    def variant(self) -> pa.Array:
        return _strings(self.table, "variant").fill_null("")

    @cached_property
    def na_text(self) -> pa.Array:
        return _strings(self.table, "na_text")

    @cached_property
    def compared(self) -> pa.Array:
        """The audit's comparison text of every option (flat)."""
        return normalise(self.choices.flat, fold=False)

    @cached_property
    def holds_insertion(self) -> np.ndarray:
        """Rows naming an inserted text or a replaced option (what no source row has)."""
        inserted = as_bool_mask(pc.is_valid(self.na_text))
        replaced = as_bool_mask(pc.is_valid(self.table.column("replaced_index")))
        return inserted | replaced

    @cached_property
    def same_len(self) -> np.ndarray:
        return self.choices.lengths == self.original.lengths

    @cached_property
    def key_text(self) -> pa.Array:
        return self.choices.at(self.answer)

    @cached_property
    def gold_text(self) -> pa.Array:
        return self.original.at(self.orig_answer)

    @cached_property
    def na_count(self) -> np.ndarray:
        return self.choices.count_equal(self.na_text)

    @cached_property
    def prefix_ok(self) -> np.ndarray:
        return self.choices.prefix_equal(self.original)

    @cached_property
    def stray_flagged(self) -> np.ndarray:
        """Rows holding a flagged option (audit patterns, or an NA / AOTA text of the build)
        anywhere but where its own inserted text stands."""
        # a borrowed text (foreign_key) is another item's ordinary gold, not a phrasing
        pairs = zip(self.na_text.to_pylist(), self.variant.to_pylist(), strict=True)
        plain = self.plain_text_variants
        inserted = sorted({t for t, v in pairs if t is not None and v not in plain})
        phrases = {"has_none_option": (*self.extra_na_texts, *inserted)}
        flagged = any_flagged(self.choices.flat, phrases)
        row_of = np.repeat(np.arange(self.n), self.choices.lengths)
        own_text = self.na_text.take(pa.array(row_of, pa.int64()))
        own = as_bool_mask(pc.equal(self.choices.flat, own_text))
        return self.choices.per_row_any(flagged & ~own)

    @cached_property
    def unreplaced_changed(self) -> np.ndarray:
        """Rows where an option other than `replaced_index` differs from `original_choices`."""
        changed = np.zeros(self.n, dtype=bool)
        for j in range(max(self.choices.width, self.original.width)):
            differ = ~self.equal(self.choices.column(j), self.original.column(j))
            changed |= differ & (self.replaced != j)
        return changed | ~self.same_len

    @cached_property
    def traced_differences(self) -> dict[str, np.ndarray]:
        """Per traced field, the rows (of ids found in `source`) that differ from the
        `original` row of their id (ids missing there are `id_in_original`'s)."""
        if self.source is None or self.source.num_rows == 0:
            return {}
        pos = pc.index_in(self.ids, value_set=_strings(self.source, "id"))
        found = ~np.asarray(pos.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        source = self.source.take(pos.fill_null(0))
        out: dict[str, np.ndarray] = {}
        for name in TRACED:
            mine = self.table.column(name).combine_chunks()
            theirs = source.column("answer" if name == "original_answer" else name)
            theirs = theirs.combine_chunks().cast(mine.type)
            same = pc.or_kleene(
                pc.equal(mine, theirs), pc.and_kleene(pc.is_null(mine), pc.is_null(theirs))
            )
            out[name] = found & ~as_bool_mask(same)
        theirs_choices = ListColumn(source.column("choices"))
        same_choices = self.original.lengths == theirs_choices.lengths
        out["original_choices"] = found & ~(
            same_choices & self.original.prefix_equal(theirs_choices)
        )
        return out

    def is_variant(self, name: str) -> np.ndarray:
        return as_bool_mask(pc.equal(self.variant, name))

    def equal(self, a: pa.Array, b: pa.Array) -> np.ndarray:
        return as_bool_mask(pc.equal(a, b))

    def differs(self, a: pa.Array, b: pa.Array) -> np.ndarray:
        return ~as_bool_mask(pc.equal(a, b))


def show(arr: pa.Array, i: int) -> str:
    return repr(arr[i].as_py())


@dataclass(frozen=True)
class Rule:
    """One invariant. `variants` are the row variants it applies to (None: every row), so a
    config of another variant never runs it; `broken` marks the violating rows."""

    name: str
    description: str
    variants: tuple[str, ...] | None
    broken: Callable[[Rows], np.ndarray]
    explain: Callable[[Rows, int], str]
    # It reads the build's seed: a lone file or a contribution has none, so it never runs.
    needs_seed: bool = False

    def scope(self, rows: Rows) -> np.ndarray:
        if self.needs_seed and rows.seed is None:
            return np.zeros(rows.n, dtype=bool)
        if self.variants is None:
            return np.ones(rows.n, dtype=bool)
        scope = np.zeros(rows.n, dtype=bool)
        for variant in self.variants:
            scope |= rows.is_variant(variant)
        return scope


def gold_absent_rule(variant: str) -> Rule:
    """`<variant>_gold_absent`: the original gold text is gone (every NA-keyed placement)."""
    return Rule(
        f"{variant}_gold_absent",
        f"`{variant}`: the original gold text is gone",
        (variant,),
        lambda v: v.choices.count_equal(v.gold_text) > 0,
        lambda v, i: f"original gold text {show(v.gold_text, i)} is still among the choices",
    )


# A builder's per-item draw of `replaced_index` (`distractor_indices`, `mixed_indices`).
IndexDraw = Callable[[ItemColumns, int], np.ndarray]


def seeded_draw(v: Rows, draw: IndexDraw, at: np.ndarray | None = None) -> np.ndarray:
    """`draw` recomputed for rows `at` (default all) from the build's seed and their own id,
    `original_choices` and `original_answer`: the builder's input, so a forger who moves
    the draw and rehashes the files is still caught."""
    at = np.arange(v.n) if at is None else at
    items = pa.table(
        {"id": v.ids, "choices": v.table.column("original_choices"), "answer": v.orig_answer}
    ).take(pa.array(at, pa.int64()))
    with np.errstate(divide="ignore"):  # a row under two options: other rules name it
        return draw(ItemColumns.from_table(items), int(v.seed or 0))


def draw_rule(variant: str, draw: IndexDraw) -> Rule:
    """`<variant>_drawn`: `replaced_index` is the builder's seeded draw for the row."""
    return Rule(
        f"{variant}_drawn",
        f"`{variant}`: `replaced_index` is the draw of the build's seed and the row's `id`",
        (variant,),
        lambda v: v.replaced != seeded_draw(v, draw),
        lambda v, i: (
            f"replaced_index {v.replaced[i]} is not {seeded_draw(v, draw, np.array([i]))[0]}, "
            f"the draw of seed {v.seed} for this id"
        ),
        needs_seed=True,
    )
