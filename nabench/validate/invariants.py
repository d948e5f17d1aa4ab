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
from nabench.perturb.rules import Rows, Rule, config_variant, show
from nabench.schemas import Violation, nullable_types, pandera_schema, schema_violations

# Every variant a row may name: the builders registered in `perturb` (one source of truth).
VARIANTS = tuple(BUILDERS)
LETTERS = "ABCDEFGHIJ"
LETTER_SHARE_WARNING = 0.40
# The variants that insert an ordinary option text, not a phrasing (foreign_key's borrowed
# gold); any other row's `na_text` is a phrasing no other option may hold.
PLAIN_TEXT_VARIANTS = frozenset(
    k for k, b in BUILDERS.items() if b.inserted_reason is None and b.inserts_once
)


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


def row_view(
    table: pa.Table,
    config: str | None = None,
    source: pa.Table | None = None,
    extra_na_texts: tuple[str, ...] = (),
    seed: int | None = None,
) -> Rows:
    """The rules' view of a perturbed table, with what the registered variants insert."""
    return Rows(table, PLAIN_TEXT_VARIANTS, config, source, extra_na_texts, seed)


def _sharing(flag: str) -> tuple[str, ...]:
    """The variants whose builder sets `flag` (a rule several variants share)."""
    return tuple(k for k, b in BUILDERS.items() if getattr(b, flag))


# The invariants of every row, and those several variants share (by a builder flag); each
# variant's own rules come from its builder, in registry order. `description` is the card's.
_HEAD: tuple[Rule, ...] = (
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
        _sharing("inserts_once"),
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
        _sharing("keeps_unreplaced"),
        lambda v: v.unreplaced_changed,
        lambda v, i: (
            f"an option other than replaced_index {v.replaced[i]} differs from original_choices"
        ),
    ),
)
_TAIL: tuple[Rule, ...] = (
    Rule(
        "ids_unique",
        "ids are unique within a config",
        None,
        lambda v: first_repeats(v.ids),
        lambda v, i: "id repeats an earlier row",
    ),
)
# The row invariants of a perturbed table, any variant.
ROW_RULES: tuple[Rule, ...] = (
    *_HEAD,
    *(rule for builder in BUILDERS.values() for rule in builder.rules),
    *_TAIL,
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


# Rules that read a row's config, the `original` config of its split and the build's seed:
# what a lone file cannot be checked against (`check_perturbed` runs only ROW_RULES).
BUILD_RULES: tuple[Rule, ...] = (
    Rule(
        "seed_of_build",
        "every row's `seed` is the build's seed (build.json), which its draws are made from",
        None,
        # a build.json without a seed (deleted by a forger?) vouches for no row's seed
        lambda v: np.ones(v.n, dtype=bool) if v.seed is None else v.row_seed != v.seed,
        lambda v, i: f"seed {v.row_seed[i]} is not the build's seed ({v.seed} in build.json)",
    ),
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
    rows = row_view(table, extra_na_texts=tuple(extra_na_texts))
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
