"""Property tests of the builders, the eligibility audit and the validators (hypothesis).

CI loads the `ci` profile (1,000 examples per property, see tests/conftest.py)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from property_settings import MODERATE

from nabench.audit.eligibility import audit_items
from nabench.perturb import AllOfTheAbove, ItemColumns, NADistractor, NAKeyed, Original
from nabench.schemas.tables import ITEM_ARROW
from nabench.validate.invariants import check_perturbed

WORDS = st.text(alphabet="abcdefghijklmopqrstuvwxyz0123456789 ", min_size=1, max_size=12).map(
    lambda s: f"opt {s.strip()}"
)
NA_TEXTS = st.sampled_from(["None of the above", "Answer not found", "No valid options"])


@st.composite
def item_tables(draw: st.DrawFn, min_size: int = 1, max_size: int = 12) -> pa.Table:
    n = draw(st.integers(min_size, max_size))
    ids = draw(st.lists(st.integers(0, 99_999), min_size=n, max_size=n, unique=True))
    rows = []
    for k in ids:
        choices = draw(st.lists(WORDS, min_size=4, max_size=4, unique_by=str.strip))
        rows.append(
            {
                "id": f"mmlu/all/test/{k:05d}",
                "source": "mmlu",
                "subject": draw(st.sampled_from([None, "anatomy", "virology"])),
                "question": draw(st.text(max_size=30)),
                "choices": choices,
                "answer": draw(st.integers(0, 3)),
            }
        )
    return pa.Table.from_pylist(rows, schema=ITEM_ARROW)


def builders(na_text: str) -> list:
    return [Original(), NAKeyed(text=na_text), NADistractor(text=na_text), AllOfTheAbove()]


def rows_by_id(table: pa.Table) -> dict[str, dict]:
    return {row["id"]: row for row in table.to_pylist()}


@MODERATE
@given(items=item_tables(), seed=st.integers(0, 2**31), na_text=NA_TEXTS)
def test_builders_are_deterministic_and_valid(items: pa.Table, seed: int, na_text: str) -> None:
    cols = ItemColumns.from_table(items)
    for builder in builders(na_text):
        first = builder.build(cols, seed)
        assert first.equals(builder.build(ItemColumns.from_table(items), seed))
        assert check_perturbed(first, builder.config_name, [na_text]) == []


@MODERATE
@given(items=item_tables(min_size=2), seed=st.integers(0, 2**31), data=st.data())
def test_removing_items_never_changes_other_items(items: pa.Table, seed: int, data) -> None:
    keep = data.draw(st.lists(st.booleans(), min_size=items.num_rows, max_size=items.num_rows))
    subset = items.filter(pa.array(keep))
    for builder in builders("None of the above"):
        full = rows_by_id(builder.build(ItemColumns.from_table(items), seed))
        part = rows_by_id(builder.build(ItemColumns.from_table(subset), seed))
        assert all(full[i] == row for i, row in part.items())


@MODERATE
@given(items=item_tables(), seed=st.integers(0, 2**31), na_text=NA_TEXTS)
def test_exactly_one_key_and_na_placement(items: pa.Table, seed: int, na_text: str) -> None:
    cols = ItemColumns.from_table(items)
    source = rows_by_id(items)
    keyed = NAKeyed(text=na_text).build(cols, seed).to_pylist()
    dist = NADistractor(text=na_text).build(cols, seed).to_pylist()
    aota = AllOfTheAbove().build(cols, seed).to_pylist()
    for k, d, a in zip(keyed, dist, aota, strict=True):
        src = source[k["id"]]
        gold = src["choices"][src["answer"]]
        # na_keyed: NA replaces the gold option in place and is the only key.
        assert k["choices"][k["answer"]] == na_text and k["answer"] == src["answer"]
        assert k["choices"].count(na_text) == 1 and gold not in k["choices"]
        # na_distractor: gold keeps its place; exactly one distractor became NA.
        assert d["choices"][d["answer"]] == gold and d["answer"] == src["answer"]
        assert d["choices"].count(na_text) == 1
        assert d["replaced_index"] != d["answer"] and d["choices"][d["replaced_index"]] == na_text
        assert sum(x != y for x, y in zip(d["choices"], src["choices"], strict=True)) == 1
        # all_of_the_above: appended last, never the key.
        assert a["choices"] == [*src["choices"], "All of the above"]
        assert a["answer"] == src["answer"]


MUTATIONS = {
    "key_in_range": lambda r: r.update(answer=len(r["choices"])),
    "choices_distinct": lambda r: r["choices"].__setitem__(
        (r["answer"] + 1) % 4, r["choices"][(r["answer"] + 2) % 4]
    ),
    "choices_non_empty": lambda r: r["choices"].__setitem__((r["answer"] + 1) % 4, " "),
}


@MODERATE
@given(
    items=item_tables(),
    seed=st.integers(0, 2**31),
    kind=st.sampled_from(["na_keyed", "na_distractor", "all_of_the_above", "original"]),
    rule=st.sampled_from([*sorted(MUTATIONS), "variant_specific"]),
    data=st.data(),
)
def test_validator_names_the_mutated_row(
    items: pa.Table, seed: int, kind: str, rule: str, data
) -> None:
    builder = {b.kind: b for b in builders("None of the above")}[kind]
    table = builder.build(ItemColumns.from_table(items), seed)
    rows = table.to_pylist()
    row = data.draw(st.integers(0, len(rows) - 1))
    target = rows[row]
    if rule == "variant_specific":
        expected = {
            "na_keyed": "na_keyed_key_is_na",
            "na_distractor": "na_distractor_key_is_gold",
            "all_of_the_above": "aota_key_unchanged",
            "original": "original_unchanged",
        }[kind]
        target["answer"] = (target["answer"] + 1) % 4
    else:
        expected = rule
        MUTATIONS[rule](target)
    broken = pa.Table.from_pylist(rows, schema=table.schema)
    found = {(v.row, v.rule) for v in check_perturbed(broken, kind)}
    assert (row, expected) in found
    assert {r for r, _ in found} == {row}  # nothing else is blamed


NONE_OR_ALL = st.sampled_from(
    [
        "None of the above",
        "none of these.",
        "Neither",
        "All of the above",
        "Both A and B",
        "both",
        "all of these",
    ]
)


@MODERATE
@given(items=item_tables(), data=st.data())
def test_audit_quarantines_exactly_the_ineligible(items: pa.Table, data) -> None:
    rows = items.to_pylist()
    expected: dict[str, str] = {}
    for r in rows:
        defect = data.draw(st.sampled_from(["ok", "ok", "none_all", "dup", "empty", "three"]))
        if defect == "none_all":
            text = data.draw(NONE_OR_ALL)
            r["choices"][data.draw(st.integers(0, 3))] = text
            low = text.lower()
            expected[r["id"]] = (
                "has_none_option" if low.startswith(("none", "neither")) else "has_all_option"
            )
        elif defect == "dup":
            r["choices"][1] = r["choices"][0] + "  "
            expected[r["id"]] = "duplicate_choices"
        elif defect == "empty":
            r["choices"][2] = ""
            expected[r["id"]] = "empty_choice"
        elif defect == "three":
            r["choices"] = r["choices"][:3]
            r["answer"] = min(r["answer"], 2)
            expected[r["id"]] = "not_four_choices"
        if not r["question"].strip():  # a blank question is a malformed row, reported first
            expected[r["id"]] = "missing_question"
    table = pa.Table.from_pylist(rows, schema=ITEM_ARROW)
    audit = audit_items(table, ["None of the above"], ["All of the above"])
    got = dict(
        zip(
            audit.excluded.column("id").to_pylist(),
            audit.excluded.column("reason").to_pylist(),
            strict=True,
        )
    )
    assert got == expected
    assert audit.eligible.num_rows + audit.excluded.num_rows == table.num_rows
    assert set(audit.eligible.column("id").to_pylist()).isdisjoint(got)
