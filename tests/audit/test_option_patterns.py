"""The audit's option patterns (`nabench/audit/option_patterns.yaml`) against a hand-written
table of positive and negative cases, and a hypothesis grammar of such phrasings, obfuscated
with zero-width, fullwidth and no-break characters.

Decisions the table pins down (also stated in the YAML file):
- statement selections ("I and II only", "I, II, and III", "1 and 2 only") are content;
- "Both/Neither" over listed labels ("Both I and II", "Neither A nor B") is flagged;
- content built with neither/nor, both/and, all ("Neither accurate nor precise") is content,
  as are quantity answers ("None, because of her own laches").
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import MODERATE

from nabench.audit.eligibility import audit_items
from nabench.audit.patterns import PATTERN_REASONS, flag_options, option_patterns, text_reasons

NONE, ALL, REFERS = "has_none_option", "has_all_option", "refers_to_other_options"

POSITIVE: list[tuple[str, str]] = [
    ("None of the above", NONE),
    ("none of above.", NONE),
    ("None of above.", NONE),
    ("Nither of above.", NONE),
    ("None", NONE),
    ("Neither.", NONE),
    ("None of these", NONE),
    ("neither of them", NONE),
    ("Neither A nor B", NONE),
    ("neither (a) nor (b)", NONE),
    ("Nether A nor B", NONE),
    ("Neither I nor II", NONE),
    ("No correct answer", NONE),
    ("Answer not found", NONE),
    ("None of the options given is correct", NONE),
    # NA-like answers of real MMLU items (patterns v4): they claim no listed option holds
    ("There is insufficient information to answer this question.", NONE),
    ("Not enough information to say", NONE),
    ("The answer cannot be determined without knowing the size of the jury pool.", NONE),
    ("cannot be determined", NONE),
    ("None is correct", NONE),
    ("All choices are false", NONE),
    ("None\u200b of the above", NONE),
    ("N\u200bone of the ab\u2060ove", NONE),
    ("\uff2e\uff4f\uff4e\uff45 of the above", NONE),  # fullwidth "None"
    ("None of the\u00a0above", NONE),
    ("NONE OF THE ABOVE!", NONE),
    ("None of the above. The influence of deterrence theory was illusory.", NONE),
    ("All of the above", ALL),
    ("all of above.", ALL),
    ("All the above", ALL),
    ("ALL of the above", ALL),
    ("All of the below.", ALL),
    ("Any of the above", ALL),
    ("any of these", ALL),
    ("Any one of the options", ALL),
    ("All of these options.", ALL),
    ("Both of these", ALL),
    ("Either of these", ALL),
    ("Each of these produces a sonic boom", ALL),
    ("Both", ALL),
    ("Either", ALL),
    ("Both A and B", ALL),
    ("both (a) and (c)", ALL),
    ("Both I and II", ALL),
    ("Both 2 and 3.", ALL),
    ("All of (a) to (c) are potential disadvantages of the approach.", ALL),
    ("All of the options given are correct", ALL),
    ("All\u200b of the above", ALL),
    ("A and B", REFERS),
    ("B and C only", REFERS),
    ("(A), (B), and (C)", REFERS),
    ("Either A or B", REFERS),
    ("Options A and B", REFERS),
    ("both A and D are correct.", REFERS),
    ("A, B, and C", REFERS),
    ("A B and C", REFERS),
    ("a. and b. above", REFERS),
    ("(B) (C) and (D).", REFERS),
    ("(A), (B), and (C) are part of the theory", REFERS),
    ("Use the method in (A), but use an oxyacetylene torch.", REFERS),
    ("the same as choice B", REFERS),
    ("Any 2 of the above values", REFERS),
    ("To achieve all the functions listed above", REFERS),
    ("A\u200b and B", REFERS),
    # v5: whole options quantifying over a counted or named set (MMLU test 216, 9677, 11747,
    # 10867, 11316, 1034)
    ("all three structures.", ALL),
    ("Both of the interventions", ALL),
    ("All three defendants.", ALL),
    ("All three representations", ALL),
    ("None of the interventions", NONE),
    ("neither of the indictments.", NONE),
    ("none of the stereos.", NONE),
    ("All three", ALL),
    ("all four.", ALL),
    ("\uff21 and \uff22", REFERS),  # fullwidth letters
]

NEGATIVE = [
    "I and II only",
    "I, II, and III",
    "II and IV only",
    "I or II only",
    "1 and 2 only",
    "1, 2 and 3 only",
    "III only",
    "Neither accurate nor precise",
    "Neither the buyer nor the seller",
    "neither larceny nor embezzlement.",
    "when there are not enough data available",
    "that cannot be answered, vaguely or precisely.",
    "Both supply and demand shift rightward.",
    "both instinctive and learned",
    "All cells are surrounded by a plasma membrane.",
    "None, because of her own laches.",
    "All three steps are exothermic.",
    "both indictments.",
    "all waves.",
    "All Verbal subtests",
    "all of us",
    "All of this",
    "none of this.",
    "Both of its",
    "None of the offspring will be affected",
    "Vitamin A and D",
    "Excess consumption of Vitamins A and C",
    "firms A and B are substitutes because the cross-price elasticity is greater than zero.",
    "Country A and B have identical living standards.",
    "The a and c coefficients significant",
    "f (c) = f (d)",
    "f(c)",
    "No, because Rule 404(b) permits the use of such evidence.",
    "above average",
    "Inspect the nail-bed angle from above",
    "AB",
    "Hepatitis C",
    "Streptococcus pyogenes (group A)",
    "They answer a question",
    "the choices a person makes",
    "Mercury",
    "P(A and B) = P(A) · P(B)",
]


@pytest.mark.parametrize(("text", "reason"), POSITIVE, ids=[repr(t) for t, _ in POSITIVE])
def test_positive_cases(text: str, reason: str) -> None:
    reasons = text_reasons(text)
    assert reasons and reasons[0] == reason, reasons


@pytest.mark.parametrize("text", NEGATIVE)
def test_negative_cases(text: str) -> None:
    assert text_reasons(text) == []


def test_patterns_are_versioned_data() -> None:
    patterns = option_patterns()
    info = patterns.manifest()
    assert info["version"] == patterns.version and len(info["sha256"]) == 64
    assert set(info["patterns"]) == set(PATTERN_REASONS)
    assert all(info["patterns"][r] for r in PATTERN_REASONS)
    ids = [p.id for p in patterns.patterns]
    assert len(ids) == len(set(ids))


# --- a grammar of phrasings --------------------------------------------------------------

_ZW = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@st.composite
def obfuscated(draw: st.DrawFn, text: str) -> str:
    """`text` in random case, maybe fullwidth, with zero-width and no-break characters
    (one seeded Random per example keeps generation cheap)."""
    rnd = draw(st.randoms(use_true_random=False))
    chars = [c.upper() if rnd.random() < 0.5 else c.lower() for c in text]
    if rnd.random() < 0.5:
        chars = [_fullwidth(c) for c in chars]
    if rnd.random() < 0.5:
        chars = ["\u00a0" if c == " " else c for c in chars]
    for _ in range(rnd.randint(0, 3)):
        chars.insert(rnd.randint(0, len(chars)), rnd.choice(_ZW))
    return "".join(chars) + rnd.choice(["", ".", "!", " ."])


def _phrase(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(*parts).map(lambda ps: "".join(ps))


_SET = st.sampled_from(["above", "the above", "these", "those", "the options", "the choices"])
NA_PHRASES = _phrase(
    st.sampled_from(["none", "neither"]),
    st.just(" of "),
    st.one_of(_SET, st.sampled_from(["the interventions", "the indictments", "the stereos"])),
)
_PLURAL = st.sampled_from(["structures", "interventions", "defendants", "cells", "drugs"])
ALL_PHRASES = st.one_of(
    _phrase(st.sampled_from(["all", "any"]), st.just(" of "), _SET),
    # v5: a whole option quantifying over a counted or named set
    _phrase(
        st.sampled_from(["all", "both", "each"]),
        st.sampled_from([" ", " of the "]),
        st.sampled_from(["two ", "three ", "four ", "3 "]),
        _PLURAL,
    ),
    _phrase(st.sampled_from(["all", "both", "each"]), st.just(" of the "), _PLURAL),
)
_LETTER = st.tuples(st.sampled_from("ABCDE"), st.sampled_from(["{}", "({})", "{}."])).map(
    lambda t: t[1].format(t[0])
)


@st.composite
def letter_refs(draw: st.DrawFn) -> str:
    letters = draw(st.lists(_LETTER, min_size=2, max_size=4))
    seps = [draw(st.sampled_from([", ", " and ", " or ", " & "])) for _ in letters[1:]]
    body = letters[0] + "".join(s + x for s, x in zip(seps, letters[1:], strict=True))
    lead = draw(st.sampled_from(["", "both ", "either ", "options ", "answers "]))
    tail = draw(st.sampled_from(["", " only", " are correct", " are both correct"]))
    return lead + body + tail


_ROMAN = st.sampled_from(["I", "II", "III", "IV"])
STATEMENTS = st.lists(_ROMAN, min_size=1, max_size=4, unique=True).map(
    lambda xs: (", ".join(xs[:-1]) + " and " + xs[-1] if len(xs) > 1 else xs[0]) + " only"
)
_NOUN = st.sampled_from(["the buyer", "accurate", "larceny", "supply", "the heroin", "cats"])
CONTENT = _phrase(
    st.sampled_from(["Neither ", "Both "]), _NOUN, st.sampled_from([" nor ", " and "]), _NOUN
)


def _reasons(texts: list[str]) -> list[set[str]]:
    """Per text, the reasons it is flagged for (one vectorised call for a whole batch)."""
    flags = flag_options(pa.array(texts, pa.string()))
    return [{r for r in PATTERN_REASONS if flags[r][i]} for i in range(len(texts))]


def _batch(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(strategy.flatmap(obfuscated), min_size=1, max_size=10)


@MODERATE
@given(_batch(NA_PHRASES))
def test_grammar_na_phrasings(texts: list[str]) -> None:
    for text, reasons in zip(texts, _reasons(texts), strict=True):
        assert NONE in reasons, repr(text)


@MODERATE
@given(_batch(ALL_PHRASES))
def test_grammar_all_phrasings(texts: list[str]) -> None:
    for text, reasons in zip(texts, _reasons(texts), strict=True):
        assert ALL in reasons, repr(text)


@MODERATE
@given(_batch(letter_refs()))
def test_grammar_letter_references(texts: list[str]) -> None:
    for text, reasons in zip(texts, _reasons(texts), strict=True):
        assert reasons, repr(text)


@MODERATE
@given(_batch(st.one_of(STATEMENTS, CONTENT)))
def test_grammar_content_is_not_flagged(texts: list[str]) -> None:
    for text, reasons in zip(texts, _reasons(texts), strict=True):
        assert reasons == set(), repr(text)


# --- the audit on obfuscated options -----------------------------------------------------


def _items(choices: list[list[str | None]]) -> pa.Table:
    n = len(choices)
    return pa.table(
        {
            "id": [f"mmlu/all/test/{i:05d}" for i in range(n)],
            "source": ["mmlu"] * n,
            "subject": ["x"] * n,
            "question": ["q?"] * n,
            "choices": pa.array(choices, pa.list_(pa.string())),
            "answer": [0] * n,
        }
    )


def test_audit_compares_normalised_text() -> None:
    table = _items(
        [
            ["Paris", "Paris\u200b", "Rome", "Oslo"],  # zero-width duplicate
            ["\uff30aris", "Paris", "Rome", "Oslo"],  # fullwidth duplicate
            ["Paris", "None\u200b of the above", "Rome", "Oslo"],
            ["Paris", "Rome", "A and B", "Oslo"],
            ["Paris", "Rome", None, "Oslo"],  # a null element
            ["Paris", "Rome", "Oslo", "Bern"],
        ]
    )
    audit = audit_items(table, ["None of the above"], ["All of the above"])
    reasons = dict(
        zip(
            audit.excluded.column("id").to_pylist(),
            audit.excluded.column("reason").to_pylist(),
            strict=True,
        )
    )
    assert reasons == {
        "mmlu/all/test/00000": "duplicate_choices",
        "mmlu/all/test/00001": "duplicate_choices",
        "mmlu/all/test/00002": "has_none_option",
        "mmlu/all/test/00003": "refers_to_other_options",
        "mmlu/all/test/00004": "empty_choice",
    }
    assert audit.eligible.column("id").to_pylist() == ["mmlu/all/test/00005"]


def test_inserted_text_that_is_no_phrasing_has_its_own_reason() -> None:
    """An item holding a recipe's inserted text is quarantined for what the option is: an NA
    phrasing stays has_none_option, a custom NA text that is an ordinary option ("Paris",
    "All of the above" as an NA text) is has_inserted_text, not has_none_option."""
    table = _items(
        [
            ["Lyon", "None of the above", "Rome", "Oslo"],
            ["Paris", "Rome", "Oslo", "Bern"],
            ["All of the above", "Rome", "Oslo", "Bern"],
            ["Lyon", "Rome", "Oslo", "Bern"],
        ]
    )
    audit = audit_items(table, ["None of the above", "PARIS", "All of the above"])
    reasons = {r["id"]: (r["reason"], r["reasons"]) for r in audit.excluded.to_pylist()}
    assert reasons == {
        "mmlu/all/test/00000": ("has_none_option", ["has_none_option", "refers_to_other_options"]),
        "mmlu/all/test/00001": ("has_inserted_text", ["has_inserted_text"]),
        "mmlu/all/test/00002": (
            "has_all_option",
            ["has_all_option", "has_inserted_text", "refers_to_other_options"],
        ),
    }
