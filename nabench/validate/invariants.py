"""Vectorised invariants of perturbed tables, plus the pandera schema check.

Every rule is a boolean mask over rows computed with Arrow kernels on the flattened choices
(offsets + flat values), so validating full MMLU costs milliseconds; every violation names
file, row, id and rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.arrow import as_bool_mask
from nabench.perturb import BUILDERS
from nabench.schemas import Violation, nullable_types, pandera_schema, schema_violations
from nabench.validate.placement import (
    FOREIGN_KEY,
    NA_KEYED_LAST,
    PLACEMENT_RULES,
    gold_absent_rule,
)
from nabench.validate.rows import Rows, Rule, config_variant, show

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
    rules: list[Rule] = field(default_factory=list)  # the rule records that ran


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).fill_null(-1).to_numpy().astype(np.int64)


def first_repeats(values: pa.Array) -> np.ndarray:
    """True for each row whose value already appeared in an earlier row."""
    # dictionary_encode numbers values in order of first appearance, so a row is a first
    # occurrence exactly when its code exceeds every earlier code.
    codes = pc.dictionary_encode(values).indices.fill_null(-1).to_numpy(zero_copy_only=False)
    if len(codes) == 0:
        return np.zeros(0, dtype=bool)
    earlier_max = np.concatenate([[-1], np.maximum.accumulate(codes)[:-1]])
    return codes <= earlier_max


_INSERTING = (
    "na_keyed", "na_distractor", "na_mixed", "all_of_the_above", NA_KEYED_LAST, FOREIGN_KEY
)  # fmt: skip
_KEYED, _DIST, _MIXED, _ORIG, _AOTA = (
    ("na_keyed",),
    ("na_distractor",),
    ("na_mixed",),
    ("original",),
    ("all_of_the_above",),
)

# The row invariants of a perturbed table, any variant; `description` is the card's text.
ROW_RULES: tuple[Rule, ...] = (
    Rule(
        "key_in_range",
        "the answer index points at an existing option",
        None,
        lambda v: (v.answer < 0) | (v.answer >= v.choices.lengths),
        lambda v, i: f"answer {v.answer[i]} not in [0, {v.choices.lengths[i]})",
    ),
    Rule(
        "choices_non_empty",
        "no option is empty",
        None,
        lambda v: v.choices.per_row_any(as_bool_mask(pc.equal(v.compared, ""))),
        lambda v, i: "a choice is empty",
    ),
    Rule(
        "choices_distinct",
        "no two options have the same text",
        None,
        lambda v: v.choices.has_duplicates(v.compared),
        lambda v, i: "two choices have the same text",
    ),
    Rule(
        "na_exactly_once",
        "NA / All-of-the-above variants hold the inserted text exactly once",
        _INSERTING,
        lambda v: v.na_count != 1,
        lambda v, i: f"{show(v.na_text, i)} appears {v.na_count[i]} times (expected exactly once)",
    ),
    Rule(
        "variant_known",
        "every row names a known variant",
        None,
        lambda v: ~as_bool_mask(pc.is_in(v.variant, pa.array(VARIANTS))),
        lambda v, i: f"unknown variant {show(v.variant, i)} (known: {', '.join(VARIANTS)})",
    ),
    Rule(
        "no_flagged_option",
        "no option but the inserted one is an NA / all-type phrasing or names other options",
        None,
        lambda v: v.stray_flagged,
        lambda v, i: (
            "an option other than the inserted one is an NA / all-type phrasing or "
            "refers to other options"
        ),
    ),
    Rule(
        "unreplaced_unchanged",
        "NA variants: every option not replaced equals the source's",
        (*_KEYED, *_DIST, *_MIXED),
        lambda v: v.unreplaced_changed,
        lambda v, i: (
            f"an option other than replaced_index {v.replaced[i]} differs from original_choices"
        ),
    ),
    Rule(
        "original_unchanged",
        "`original` rows equal their source rows",
        _ORIG,
        lambda v: ~(v.same_len & v.prefix_ok) | (v.answer != v.orig_answer),
        lambda v, i: "original row differs from its source choices/answer",
    ),
    Rule(
        "na_keyed_key_is_na",
        "`na_keyed`: the key is the NA text",
        _KEYED,
        lambda v: v.differs(v.key_text, v.na_text),
        lambda v, i: f"key text is {show(v.key_text, i)}, expected {show(v.na_text, i)}",
    ),
    gold_absent_rule("na_keyed"),
    Rule(
        "na_keyed_in_place",
        "`na_keyed`: NA replaces the gold option in place",
        _KEYED,
        lambda v: (v.replaced != v.orig_answer) | (v.answer != v.orig_answer),
        lambda v, i: "NA must replace the gold option in place",
    ),
    *PLACEMENT_RULES,
    Rule(
        "na_distractor_key_is_gold",
        "`na_distractor`: the key is still the original gold",
        _DIST,
        lambda v: v.differs(v.key_text, v.gold_text) | (v.answer != v.orig_answer),
        lambda v, i: (
            f"key text is {show(v.key_text, i)}, expected original gold {show(v.gold_text, i)}"
        ),
    ),
    Rule(
        "na_distractor_replaced_distractor",
        "`na_distractor`: NA replaced a distractor",
        _DIST,
        lambda v: (v.replaced == v.answer) | v.differs(v.choices.at(v.replaced), v.na_text),
        lambda v, i: f"replaced_index {v.replaced[i]} must be a distractor now holding the NA text",
    ),
    Rule(
        "na_mixed_in_place",
        "`na_mixed`: NA replaces one option in place; the key stays in its slot",
        _MIXED,
        lambda v: (v.answer != v.orig_answer) | v.differs(v.choices.at(v.replaced), v.na_text),
        lambda v, i: (
            f"the key must stay in the gold slot and replaced_index {v.replaced[i]} hold NA"
        ),
    ),
    Rule(
        "na_mixed_key_is_na_or_gold",
        "`na_mixed`: the key is NA where it replaced the gold, else the gold",
        _MIXED,
        lambda v: np.where(
            v.replaced == v.orig_answer,
            v.differs(v.key_text, v.na_text) | (v.choices.count_equal(v.gold_text) > 0),
            v.differs(v.key_text, v.gold_text),
        ),
        lambda v, i: (
            f"key text is {show(v.key_text, i)}: NA where it replaced the gold, else the gold"
        ),
    ),
    Rule(
        "aota_appended",
        "`all_of_the_above`: the original options plus the text, last",
        _AOTA,
        lambda v: (
            (v.choices.lengths != v.original.lengths + 1)
            | v.differs(v.choices.at(v.choices.lengths - 1), v.na_text)
            | ~v.prefix_ok
        ),
        lambda v, i: f"expected the original choices plus {show(v.na_text, i)} as the last option",
    ),
    Rule(
        "aota_key_unchanged",
        "`all_of_the_above`: the key is unchanged",
        _AOTA,
        lambda v: v.answer != v.orig_answer,
        lambda v, i: f"answer {v.answer[i]} != original answer {v.orig_answer[i]}",
    ),
    Rule(
        "ids_unique",
        "ids are unique within a config",
        None,
        lambda v: first_repeats(v.ids),
        lambda v, i: "id repeats an earlier row",
    ),
)


def _not_in_original(v: Rows) -> np.ndarray:
    if v.source is None:  # the build has no `original` config of this split
        return np.ones(v.n, dtype=bool)
    original_ids = v.source.column("id").combine_chunks().cast(pa.string())
    return ~as_bool_mask(pc.is_in(v.ids, value_set=original_ids))


def _explain_fields(v: Rows, i: int) -> str:
    fields = ", ".join(k for k, mask in v.traced_differences.items() if mask[i])
    return f"{fields} differ(s) from the `original` row of this id"


def _wrong_variant(v: Rows) -> np.ndarray:
    if v.config is None:
        return np.zeros(v.n, dtype=bool)
    return v.differs(v.variant, pa.scalar(config_variant(v.config)))


# Rules that read a row's config and the `original` config of its split: what a lone file
# cannot be checked against (`check_perturbed` runs only ROW_RULES).
BUILD_RULES: tuple[Rule, ...] = (
    Rule(
        "variant_of_config",
        "every row of a config carries that config's own variant",
        None,
        _wrong_variant,
        lambda v, i: f"variant {show(v.variant, i)} in config {v.config!r}",
    ),
    Rule(
        "id_in_original",
        "every perturbed id appears in `original` (traceable to its source row)",
        None,
        _not_in_original,
        lambda v, i: "id missing from original",
    ),
    Rule(
        "original_fields_match",
        "each row's source fields and original options equal its `original` row",
        tuple(x for x in VARIANTS if x != "original"),
        lambda v: np.logical_or.reduce([np.zeros(v.n, dtype=bool), *v.traced_differences.values()]),
        _explain_fields,
    ),
)
PERTURBED_RULES = ROW_RULES + BUILD_RULES


def run_rules(rows: Rows, rules: Iterable[Rule], where: str) -> tuple[list[Violation], list[str]]:
    """Violations of `rules` on `rows`, and the names of the rules that ran (those whose
    scope holds a row: a config holds one variant, so most rules cost nothing)."""
    out: list[Violation] = []
    ran: list[str] = []
    for rule in rules:
        scope = rule.scope(rows)
        if not scope.any():
            continue
        ran.append(rule.name)
        for i in np.flatnonzero(scope & rule.broken(rows)):
            item_id = str(rows.ids[int(i)].as_py())
            out.append(Violation(where, int(i), item_id, rule.name, rule.explain(rows, int(i))))
    return out, ran


def check_perturbed(
    table: pa.Table, where: str, extra_na_texts: Iterable[str] = ()
) -> list[Violation]:
    """All row-level invariants of a perturbed table (any variant, no build around it)."""
    rows = Rows(table, extra_na_texts=tuple(extra_na_texts))
    return run_rules(rows, ROW_RULES, where)[0]


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
