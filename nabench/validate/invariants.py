"""Vectorised invariants of perturbed tables, plus the pandera schema check.

Every rule is a boolean mask over rows computed on whole columns (numpy over the flattened
choices), so validating full MMLU costs milliseconds, and every violation names row, id and rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

KNOWN_NA_TEXTS = (
    "None of the above",
    "Answer not found",
    "No valid options",
    "None of the options given is correct",
)
LETTERS = "ABCDEFGHIJ"
LETTER_SHARE_WARNING = 0.40


@dataclass(frozen=True)
class Violation:
    """One broken rule on one row (row is the 0-based position in its file)."""

    where: str
    row: int
    id: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.where} row {self.row} id={self.id}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class _Lists:
    """A list<string> column as offsets + flat numpy values (stripped copies for comparisons)."""

    offsets: np.ndarray
    values: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, column: pa.ChunkedArray | pa.Array) -> _Lists:
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        arr = arr.fill_null(pa.scalar([], arr.type)) if arr.null_count else arr
        offsets = arr.offsets.to_numpy() - arr.offsets[0].as_py()
        values = arr.flatten().fill_null("").to_numpy(zero_copy_only=False).astype(object)
        return cls(offsets, values, np.diff(offsets))

    @property
    def parents(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.lengths)), self.lengths)

    def at(self, index: np.ndarray) -> np.ndarray:
        """Element `index[i]` of list i (None where out of range)."""
        ok = (index >= 0) & (index < self.lengths)
        out = np.full(len(index), None, dtype=object)
        out[ok] = self.values[self.offsets[:-1][ok] + index[ok]]
        return out

    def count_equal(self, per_row: np.ndarray) -> np.ndarray:
        """How many elements of list i equal per_row[i]."""
        target = np.repeat(per_row, self.lengths)
        hits = (self.values == target) if len(target) else np.zeros(0, dtype=bool)
        return np.bincount(self.parents, weights=hits, minlength=len(self.lengths)).astype(int)


def _col(table: pa.Table, name: str, fill: object = None) -> np.ndarray:
    col = table.column(name)
    if fill is not None:
        col = col.fill_null(fill)
    return col.to_numpy(zero_copy_only=False)


def check_perturbed(
    table: pa.Table, where: str, extra_na_texts: Iterable[str] = ()
) -> list[Violation]:
    """All row-level invariants of a perturbed config (any variant)."""
    n = table.num_rows
    ids = _col(table, "id").astype(object)
    choices = _Lists.of(table.column("choices"))
    original = _Lists.of(table.column("original_choices"))
    answer = _col(table, "answer", -1).astype(np.int64)
    orig_answer = _col(table, "original_answer", -1).astype(np.int64)
    replaced = _col(table, "replaced_index", -1).astype(np.int64)
    variant = _col(table, "variant", "").astype(object)
    na_text = _col(table, "na_text", "").astype(object)

    key_text = choices.at(answer)
    gold_text = original.at(orig_answer)
    stripped = np.array([v.strip() for v in choices.values], dtype=object)
    dup = pd.DataFrame({"p": choices.parents, "c": stripped}).duplicated().to_numpy()
    has_dup = np.bincount(choices.parents, weights=dup, minlength=n) > 0
    has_empty = np.bincount(choices.parents, weights=(stripped == ""), minlength=n) > 0
    na_count = choices.count_equal(na_text)
    gold_count = choices.count_equal(gold_text)
    is_na = (variant == "na_keyed") | (variant == "na_distractor")
    is_orig = variant == "original"
    is_aota = variant == "all_of_the_above"
    is_keyed = variant == "na_keyed"
    is_dist = variant == "na_distractor"
    known_na = {t.lower() for t in (*KNOWN_NA_TEXTS, *extra_na_texts)}
    lowered = np.array([v.strip().lower() for v in choices.values], dtype=object)
    na_in_original = (
        np.bincount(choices.parents, weights=np.isin(lowered, list(known_na)), minlength=n) > 0
    )
    last = choices.at(choices.lengths - 1)
    replaced_text = choices.at(replaced)
    same_as_original = (
        np.array(
            [
                a == b
                for a, b in zip(
                    table.column("choices").to_pylist(),
                    table.column("original_choices").to_pylist(),
                    strict=True,
                )
            ]
        )
        if (is_orig.any() or is_aota.any())
        else np.zeros(n, dtype=bool)
    )
    aota_prefix_ok = (
        np.array(
            [
                a[:-1] == b
                for a, b in zip(
                    table.column("choices").to_pylist(),
                    table.column("original_choices").to_pylist(),
                    strict=True,
                )
            ]
        )
        if is_aota.any()
        else np.zeros(n, dtype=bool)
    )

    rules: list[tuple[str, np.ndarray, Callable[[int], str]]] = [
        (
            "key_in_range",
            (answer < 0) | (answer >= choices.lengths),
            lambda i: f"answer {answer[i]} not in [0, {choices.lengths[i]})",
        ),
        ("choices_non_empty", has_empty, lambda i: "a choice is empty"),
        ("choices_distinct", has_dup, lambda i: "two choices have the same text"),
        (
            "na_exactly_once",
            (is_na | is_aota) & (na_count != 1),
            lambda i: f"{na_text[i]!r} appears {na_count[i]} times (expected exactly once)",
        ),
        (
            "no_na_in_original",
            is_orig & na_in_original,
            lambda i: "an NA phrasing appears among the original choices",
        ),
        (
            "original_unchanged",
            is_orig & (~same_as_original | (answer != orig_answer)),
            lambda i: "original row differs from its source choices/answer",
        ),
        (
            "na_keyed_key_is_na",
            is_keyed & (key_text != na_text),
            lambda i: f"key text is {key_text[i]!r}, expected {na_text[i]!r}",
        ),
        (
            "na_keyed_gold_absent",
            is_keyed & (gold_count > 0),
            lambda i: f"original gold text {gold_text[i]!r} is still among the choices",
        ),
        (
            "na_keyed_in_place",
            is_keyed & ((replaced != orig_answer) | (answer != orig_answer)),
            lambda i: "NA must replace the gold option in place",
        ),
        (
            "na_distractor_key_is_gold",
            is_dist & ((key_text != gold_text) | (answer != orig_answer)),
            lambda i: f"key text is {key_text[i]!r}, expected original gold {gold_text[i]!r}",
        ),
        (
            "na_distractor_replaced_distractor",
            is_dist & ((replaced == answer) | (replaced_text != na_text)),
            lambda i: f"replaced_index {replaced[i]} must be a distractor now holding the NA text",
        ),
        (
            "aota_appended",
            is_aota
            & ((choices.lengths != original.lengths + 1) | (last != na_text) | ~aota_prefix_ok),
            lambda i: f"expected the original choices plus {na_text[i]!r} as the last option",
        ),
        (
            "aota_key_unchanged",
            is_aota & (answer != orig_answer),
            lambda i: f"answer {answer[i]} != original answer {orig_answer[i]}",
        ),
    ]
    seen = pd.Series(ids).duplicated(keep="first").to_numpy()
    rules.append(("ids_unique", seen, lambda i: "id repeats an earlier row"))
    out: list[Violation] = []
    for rule, mask, explain in rules:
        for i in np.flatnonzero(mask):
            out.append(Violation(where, int(i), str(ids[i]), rule, explain(int(i))))
    return out


def check_schema(table: pa.Table, kind: str, where: str) -> list[Violation]:
    """pandera schema check; failures become violations naming row and column."""
    import pandera.errors as pe

    from nabench.schemas.tables import pandera_schema

    frame = table.to_pandas(types_mapper=_nullable_types)
    try:
        pandera_schema(kind).validate(frame, lazy=True)
    except pe.SchemaErrors as exc:
        cases = exc.failure_cases
        out = []
        ids = frame["id"].tolist() if "id" in frame else []
        for _, case in cases.head(1000).iterrows():
            idx = case.get("index")
            row = int(idx) if isinstance(idx, int | np.integer) else -1
            item_id = str(ids[row]) if 0 <= row < len(ids) else "-"
            out.append(
                Violation(
                    where,
                    row,
                    item_id,
                    f"schema:{case.get('column')}",
                    f"{case.get('check')} failed (value {case.get('failure_case')!r})",
                )
            )
        return out
    return []


def _nullable_types(arrow_type: pa.DataType) -> object:
    if pa.types.is_int64(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def letter_distribution(table: pa.Table) -> dict[str, float]:
    """Share of each answer letter (A, B, ...) in a config."""
    answers = _col(table, "answer", -1).astype(np.int64)
    answers = answers[answers >= 0]
    if len(answers) == 0:
        return {}
    counts = np.bincount(answers)
    return {LETTERS[i]: round(float(c) / len(answers), 4) for i, c in enumerate(counts) if c}
