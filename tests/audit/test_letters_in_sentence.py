"""Options that point at other options by letter *inside a longer sentence* (pattern file
version 3), against sentences that use letters for things the stem defines. The phrasings are
written for this test (no source rows are copied);
`tests/na_build/test_audit_coverage.py::test_no_option_refers_to_options_inside_a_sentence`
checks the full MMLU build."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from nabench.audit.patterns import flag_options, text_reasons

REFERS = "refers_to_other_options"

IN_SENTENCE = [
    "neither A nor B; the theory may deny that any such duty exists.",
    "Neither (a) nor (b), since the premise is false",
    "both A and B are correct; either one would suffice.",
    "Both A and C, because each condition is sufficient",
    "either A or B, depending on the reading of the statute",
    "A and C are correct, but B is not",
    "A and B are both wrong: the ruling came later",
    "B and D are true; A is not.",
    "A, B and D; C overstates the effect",
    "All of (a), (b) and (c) will hold.",
    "None of (a), (b) or (c) applies here",
    "any of A, B or C, depending on the model",
    "(a) and (b) together, as the court held",
    "The mechanism in (a) or (b), not (c)",
    "option (b) is the better reading",
    "Only A and B, since C is a distractor",
]

CONTENT = [
    "events A and B are independent when P(A ∩ B) = P(A)P(B).",
    "A and B must be disjoint.",
    "A and B may or may not be disjoint.",
    "A and B are equally fast runners.",
    "Counterexample when A and B are true and C is false",
    "valuation when B, C, and D are true and A is false",
    "A and B are both independent events",
    "firms A and B are complements",
    "Country A and B have equal output.",
    "vitamins A, D, E and K",
    "Vitamin A and D",
    "f (c) = f (d)",
    "Rule 404(b) and Rule 405",
    "Both a and an are articles",
    "none of E. coli's genes",
    "all of A's shares",
    "Either a tax or a subsidy",
    "Neither a borrower nor a lender be",
    "I and II only",
    "II, III and IV only",
    "the answer (a person's name) is unknown",
]


@pytest.mark.parametrize("text", IN_SENTENCE)
def test_letters_inside_a_sentence_are_flagged(text: str) -> None:
    assert REFERS in text_reasons(text)


@pytest.mark.parametrize("text", CONTENT)
def test_letters_naming_stem_things_are_content(text: str) -> None:
    assert text_reasons(text) == []


_LABELS = ["A", "B", "C", "D", "(a)", "(b)", "(c)", "(d)"]
_LEADS = ["both ", "neither ", "either ", "Both ", "Neither "]
_JOIN = {"both ": " and ", "neither ": " nor ", "either ": " or "}
_TAILS = [
    "; the rest follows.",
    ", because each suffices",
    " are correct; the others are not",
    ": see above",
]


def test_grammar_quantified_letters_then_more_text() -> None:
    """Every sentence of the grammar (5 leads x 8 x 8 labels x 4 tails = 1,280), flagged in
    one call of the audit's own vectorised matcher: the whole space, where a property test
    drew 1,000 of them one at a time (38 s)."""
    texts = [
        f"{lead}{first}{_JOIN[lead.lower()]}{second}{tail}"
        for lead, first, second, tail in itertools.product(_LEADS, _LABELS, _LABELS, _TAILS)
    ]
    assert len(set(texts)) == 1280
    flagged = flag_options(pa.array(texts, pa.string()))[REFERS]
    assert [t for t, hit in zip(texts, flagged, strict=True) if not hit] == []
    # the batch agrees with the one-text entry point the rest of this file uses
    assert all(REFERS in text_reasons(t) for t in texts[::97])
