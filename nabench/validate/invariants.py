"""Vectorised invariants of perturbed tables, plus the pandera schema check.

Every rule is a boolean mask over rows computed with Arrow kernels on the flattened choices
(offsets + flat values), so validating full MMLU costs milliseconds; every violation names
file, row, id and rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.audit.patterns import any_flagged, normalise
from nabench.core.arrow import ListColumn, as_bool_mask
from nabench.perturb import BUILDERS
from nabench.schemas import Violation, nullable_types, pandera_schema, schema_violations
from nabench.validate.placement import FOREIGN_KEY, NA_KEYED_LAST, RowView, placement_rules

KNOWN_NA_TEXTS = (
    "None of the above",
    "Answer not found",
    "No valid options",
    "None of the options given is correct",
)
# Every variant a row may name; a row of any other variant would escape every scoped rule.
# Every variant a row may name: the builders registered in `perturb` (one source of truth).
VARIANTS = tuple(BUILDERS)
LETTERS = "ABCDEFGHIJ"
LETTER_SHARE_WARNING = 0.40


@dataclass
class ValidationReport:
    """What `nabench validate` found: files and rows read, violations, notes."""

    files: int = 0
    rows: int = 0
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).fill_null(-1).to_numpy().astype(np.int64)


def _strings(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks().cast(pa.string())


def first_repeats(values: pa.Array) -> np.ndarray:
    """True for each row whose value already appeared in an earlier row."""
    # dictionary_encode numbers values in order of first appearance, so a row is a first
    # occurrence exactly when its code exceeds every earlier code.
    codes = pc.dictionary_encode(values).indices.fill_null(-1).to_numpy(zero_copy_only=False)
    if len(codes) == 0:
        return np.zeros(0, dtype=bool)
    earlier_max = np.concatenate([[-1], np.maximum.accumulate(codes)[:-1]])
    return codes <= earlier_max


def check_perturbed(
    table: pa.Table, where: str, extra_na_texts: Iterable[str] = ()
) -> list[Violation]:
    """All row-level invariants of a perturbed config (any variant).

    Each rule has a scope (the rows of its variant) and is only evaluated when its scope is
    non-empty: a config holds one variant, so most rules cost nothing.
    """
    ids = _strings(table, "id")
    choices = ListColumn(table.column("choices"))
    original = ListColumn(table.column("original_choices"))
    answer = _ints(table, "answer")
    orig_answer = _ints(table, "original_answer")
    replaced = _ints(table, "replaced_index")
    variant = _strings(table, "variant").fill_null("")
    na_text = _strings(table, "na_text")
    compared = normalise(choices.flat, fold=False)  # the audit's comparison text

    @functools.cache
    def stray_flagged() -> np.ndarray:
        """Rows holding a flagged option (audit patterns, or an NA / AOTA text of the config)
        anywhere but where its own inserted text stands."""
        # a foreign key is another item's ordinary gold text, not an NA phrasing to look for
        inserted_by = zip(na_text.to_pylist(), variant.to_pylist(), strict=True)
        inserted = sorted({t for t, v in inserted_by if t is not None and v != FOREIGN_KEY})
        phrases = {"has_none_option": (*extra_na_texts, *inserted)}
        flagged = any_flagged(choices.flat, phrases)
        row_of = np.repeat(np.arange(table.num_rows), choices.lengths)
        own = as_bool_mask(pc.equal(choices.flat, na_text.take(pa.array(row_of, pa.int64()))))
        return choices.per_row_any(flagged & ~own)

    @functools.cache
    def unreplaced_changed() -> np.ndarray:
        """Rows where an option other than `replaced_index` differs from `original_choices`."""
        changed = np.zeros(table.num_rows, dtype=bool)
        for j in range(max(choices.width, original.width)):
            differ = ~as_bool_mask(pc.equal(choices.column(j), original.column(j)))
            changed |= differ & (replaced != j)
        return changed | ~same_len

    # Shared by several rules, computed on first use.
    @functools.cache
    def key_text() -> pa.Array:
        return choices.at(answer)

    @functools.cache
    def gold_text() -> pa.Array:
        return original.at(orig_answer)

    @functools.cache
    def na_count() -> np.ndarray:
        return choices.count_equal(na_text)

    @functools.cache
    def prefix_ok() -> np.ndarray:
        return choices.prefix_equal(original)

    def is_variant(name: str) -> np.ndarray:
        return as_bool_mask(pc.equal(variant, name))

    def differs(a: pa.Array, b: pa.Array) -> np.ndarray:
        return ~as_bool_mask(pc.equal(a, b))

    def show(arr: pa.Array, i: int) -> str:
        return repr(arr[i].as_py())

    every = np.ones(table.num_rows, dtype=bool)
    is_keyed, is_dist = is_variant("na_keyed"), is_variant("na_distractor")
    is_orig, is_aota = is_variant("original"), is_variant("all_of_the_above")
    is_mixed = is_variant("na_mixed")
    same_len = choices.lengths == original.lengths
    rules: list[tuple[str, np.ndarray, Callable[[], np.ndarray], Callable[[int], str]]] = [
        (
            "key_in_range",
            every,
            lambda: (answer < 0) | (answer >= choices.lengths),
            lambda i: f"answer {answer[i]} not in [0, {choices.lengths[i]})",
        ),
        (
            "choices_non_empty",
            every,
            lambda: choices.per_row_any(as_bool_mask(pc.equal(compared, ""))),
            lambda i: "a choice is empty",
        ),
        (
            "choices_distinct",
            every,
            lambda: choices.has_duplicates(compared),
            lambda i: "two choices have the same text",
        ),
        (
            "na_exactly_once",
            is_keyed
            | is_dist
            | is_mixed
            | is_aota
            | is_variant(NA_KEYED_LAST)
            | is_variant(FOREIGN_KEY),
            lambda: na_count() != 1,
            lambda i: f"{show(na_text, i)} appears {na_count()[i]} times (expected exactly once)",
        ),
        (
            "variant_known",
            every,
            lambda: ~as_bool_mask(pc.is_in(variant, pa.array(VARIANTS))),
            lambda i: f"unknown variant {show(variant, i)} (known: {', '.join(VARIANTS)})",
        ),
        (
            "no_flagged_option",
            every,
            stray_flagged,
            lambda i: (
                "an option other than the inserted one is an NA / all-type phrasing or "
                "refers to other options"
            ),
        ),
        (
            "unreplaced_unchanged",
            is_keyed | is_dist | is_mixed,
            unreplaced_changed,
            lambda i: (
                f"an option other than replaced_index {replaced[i]} differs from original_choices"
            ),
        ),
        (
            "original_unchanged",
            is_orig,
            lambda: ~(same_len & prefix_ok()) | (answer != orig_answer),
            lambda i: "original row differs from its source choices/answer",
        ),
        (
            "na_keyed_key_is_na",
            is_keyed,
            lambda: differs(key_text(), na_text),
            lambda i: f"key text is {show(key_text(), i)}, expected {show(na_text, i)}",
        ),
        (
            "na_keyed_gold_absent",
            is_keyed,
            lambda: choices.count_equal(gold_text()) > 0,
            lambda i: f"original gold text {show(gold_text(), i)} is still among the choices",
        ),
        (
            "na_keyed_in_place",
            is_keyed,
            lambda: (replaced != orig_answer) | (answer != orig_answer),
            lambda i: "NA must replace the gold option in place",
        ),
        (
            "na_distractor_key_is_gold",
            is_dist,
            lambda: differs(key_text(), gold_text()) | (answer != orig_answer),
            lambda i: (
                f"key text is {show(key_text(), i)}, expected original gold {show(gold_text(), i)}"
            ),
        ),
        (
            "na_distractor_replaced_distractor",
            is_dist,
            lambda: (replaced == answer) | differs(choices.at(replaced), na_text),
            lambda i: f"replaced_index {replaced[i]} must be a distractor now holding the NA text",
        ),
        (
            "na_mixed_in_place",
            is_mixed,
            lambda: (answer != orig_answer) | differs(choices.at(replaced), na_text),
            lambda i: (
                f"the key must stay in the gold slot and replaced_index {replaced[i]} hold NA"
            ),
        ),
        (
            "na_mixed_key_is_na_or_gold",
            is_mixed,
            lambda: np.where(
                replaced == orig_answer,
                differs(key_text(), na_text) | (choices.count_equal(gold_text()) > 0),
                differs(key_text(), gold_text()),
            ),
            lambda i: (
                f"key text is {show(key_text(), i)}: NA where it replaced the gold, else the gold"
            ),
        ),
        (
            "aota_appended",
            is_aota,
            lambda: (
                (choices.lengths != original.lengths + 1)
                | differs(choices.at(choices.lengths - 1), na_text)
                | ~prefix_ok()
            ),
            lambda i: f"expected the original choices plus {show(na_text, i)} as the last option",
        ),
        (
            "aota_key_unchanged",
            is_aota,
            lambda: answer != orig_answer,
            lambda i: f"answer {answer[i]} != original answer {orig_answer[i]}",
        ),
        (
            "ids_unique",
            every,
            lambda: first_repeats(ids),
            lambda i: "id repeats an earlier row",
        ),
    ]
    rules += placement_rules(
        RowView(choices, original, answer, orig_answer, replaced, na_text, variant)
    )
    out: list[Violation] = []
    for rule, scope, broken, explain in rules:
        if not scope.any():
            continue
        for i in np.flatnonzero(scope & broken()):
            out.append(Violation(where, int(i), str(ids[int(i)].as_py()), rule, explain(int(i))))
    return out


def check_ids_in_original(table: pa.Table, original_ids: pa.Array, where: str) -> list[Violation]:
    """Every id of a perturbed config must also be in `original` (traceable to its source)."""
    ids = _strings(table, "id")
    missing = ~as_bool_mask(pc.is_in(ids, value_set=original_ids))
    return [
        Violation(
            where, int(i), str(ids[int(i)].as_py()), "id_in_original", "id missing from original"
        )
        for i in np.flatnonzero(missing)
    ]


_TRACED = ("source", "subject", "question", "original_answer")


def check_against_original(table: pa.Table, original: pa.Table, where: str) -> list[Violation]:
    """Each row's `original_choices`, `original_answer` and item fields equal the `original`
    config's row of the same id (ids missing there are `id_in_original`'s)."""
    ids = _strings(table, "id")
    pos = pc.index_in(ids, value_set=_strings(original, "id"))
    found = ~np.asarray(pos.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    source = original.take(pos.fill_null(0)) if original.num_rows else None
    if source is None or not found.any():
        return []
    differs: dict[str, np.ndarray] = {}
    for name in _TRACED:
        mine = table.column(name).combine_chunks()
        theirs = source.column("answer" if name == "original_answer" else name).combine_chunks()
        same = pc.or_kleene(
            pc.equal(mine, theirs.cast(mine.type)),
            pc.and_kleene(pc.is_null(mine), pc.is_null(theirs)),
        )
        differs[name] = ~as_bool_mask(same)
    mine_choices = ListColumn(table.column("original_choices"))
    theirs_choices = ListColumn(source.column("choices"))
    differs["original_choices"] = ~(
        (mine_choices.lengths == theirs_choices.lengths) & mine_choices.prefix_equal(theirs_choices)
    )
    out = []
    for i in np.flatnonzero(found & np.logical_or.reduce(list(differs.values()))):
        fields = ", ".join(k for k, mask in differs.items() if mask[i])
        out.append(
            Violation(
                where,
                int(i),
                str(ids[int(i)].as_py()),
                "original_fields_match",
                f"{fields} differ(s) from the `original` row of this id",
            )
        )
    return out


def summarise_violations(violations: Sequence[Violation], cap: int = 20) -> str:
    """The first `cap` violations, one per line, plus how many more there are."""
    lines = [str(v) for v in violations[:cap]]
    more = len(violations) - cap
    tail = f"\n... and {more} more" if more > 0 else ""
    return f"{len(violations)} invariant violation(s):\n" + "\n".join(lines) + tail


def check_schema(table: pa.Table, kind: str, where: str) -> list[Violation]:
    """pandera schema check; failures become violations naming row and column."""

    frame = table.to_pandas(types_mapper=nullable_types)
    return schema_violations(pandera_schema(kind), frame, where)


def letter_distribution(table: pa.Table) -> dict[str, float]:
    """Share of each answer letter (A, B, ...) in a config."""
    answers = _ints(table, "answer")
    answers = answers[answers >= 0]
    if len(answers) == 0:
        return {}
    counts = np.bincount(answers)
    return {LETTERS[i]: round(float(c) / len(answers), 4) for i, c in enumerate(counts) if c}
