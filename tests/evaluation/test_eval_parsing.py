"""Answer parser: fixed examples, then hypothesis properties."""

from __future__ import annotations

import re
import string
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP

from nabench.evaluation.parsing import (
    INVALID,
    codes_to_letters,
    letters_to_codes,
    parse_answer,
    parse_answer_code,
    parse_answers,
    parse_bool,
)

LETTERS = string.ascii_uppercase
FORMS = ("({})", "{}", "{})", "{}.")
# Text after a token that keeps it a token (end, whitespace, listed punctuation).
BOUNDARIES = ("", " ", "\n", "\t", ",", ";", ":", "!", "?", "*", '"', "]", ". ", ".")
_MARKER = re.compile("answer:", re.IGNORECASE)
# Tails that change the outcome: another option label, or an answer statement.
_OTHER = re.compile(r"(?:^|\s)(?:\([A-Z]\)|[A-Z][.)])(?=\s|$)")
_STATEMENT = re.compile(r"(?i:answer|choose|pick|select|go\s+with|correct|right|best|boxed)")


CORPUS = yaml.safe_load((Path(__file__).parent / "parsing_corpus.yaml").read_text("utf-8"))


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 60
    styles = {c["style"] for c in CORPUS}
    assert {"chat", "cot", "markdown", "refusal", "empty"} <= styles
    assert sum(c["expect"] is None for c in CORPUS) >= 15  # invalid cases, not just letters


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: f"{c['style']}:{c['text'][:40]!r}")
def test_corpus(case: dict[str, object]) -> None:
    text, n = str(case["text"]), int(case.get("n", 4))  # type: ignore[call-overload]
    assert parse_answer(text, n) == case["expect"]


def test_option_listing_then_statement_is_the_statement() -> None:
    assert parse_answer("A. 6 B. 12 C. 30 D. 105  The answer is D. 105.") == "D"


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("Answer: (B) because A is wrong", 4, "B"),
        ("Answer: I think it's B", 4, None),  # "I" is a token but beyond D
        ("Answer: I think it's B", 10, "I"),  # ...and a valid label with 10 choices
        ("Answer: (c)", 4, "C"),  # lowercase after an answer key, wrapped
        ("Answer:\n\n  C)", 4, "C"),
        ("Answer: (C).", 4, "C"),
        ("Answer: C, since", 4, "C"),
        ("Answer: 4.", 4, "D"),
        ("Answer: (5)", 4, None),  # digit beyond n_choices
        ("Answer: (0)", 4, None),
        ("Answer: 10", 10, None),  # two digits are not a single token
        ("Answer: A.5", 4, None),
        ("Answer: E", 5, "E"),
        ("Answer: B**", 4, "B"),
        # the LAST statement is the conclusion...
        ("Answer: unsure. Answer: C", 4, "C"),
        ("B. Answer: C", 4, "C"),
        # ...but a made-up next question after the answer is cut off
        ("Answer: B\nQuestion: ...\nAnswer: C", 4, "B"),
        ("The answer is B", 4, "B"),
    ],
)
def test_parse_answer_examples(text: str, n: int, expected: str | None) -> None:
    assert parse_answer(text, n) == expected


def test_invalid_is_not_wrong() -> None:
    codes = parse_answers(["The answer is B", "no idea", "A. x B. y"], 4)
    assert codes.tolist() == [1, INVALID, INVALID]


@pytest.mark.parametrize("n", [0, 27, -1])
def test_n_choices_out_of_range_raises(n: int) -> None:
    with pytest.raises(ValueError, match="n_choices"):
        parse_answer("Answer: A", n)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: True", True),
        ("Answer: false.", False),
        ("answer:TRUE because", True),
        ("False", False),
        ("Answer: Truely", None),
        ("Answer: yes", None),
        ("Answer: maybe. Answer: True", None),
        ("", None),
    ],
)
def test_parse_bool_examples(text: str, expected: bool | None) -> None:
    assert parse_bool(text) is expected


def test_letter_code_round_trip() -> None:
    letters = ["A", None, "D", "Z"]
    codes = letters_to_codes(letters)
    assert codes.tolist() == [0, INVALID, 3, 25]
    assert codes_to_letters(codes) == letters
    with pytest.raises(ValueError, match="not a choice letter"):
        letters_to_codes(["a"])


@CHEAP
@given(text=st.text(), n=st.integers(1, 26))
def test_parser_never_raises(text: str, n: int) -> None:
    letter = parse_answer(text, n)
    assert letter is None or (len(letter) == 1 and LETTERS.index(letter) < n)
    assert parse_answer_code(text, n) == (INVALID if letter is None else LETTERS.index(letter))
    assert parse_bool(text) in (True, False, None)


no_marker = st.text().filter(
    lambda s: _MARKER.search(s) is None and _STATEMENT.search(s) is None and "Question" not in s
)


@CHEAP
@given(
    n=st.integers(1, 26),
    data=st.data(),
    form=st.sampled_from(FORMS),
    prefix=no_marker,
    space=st.sampled_from(["", " ", "  ", "\n"]),
    boundary=st.sampled_from(BOUNDARIES),
    tail=st.text(),
)
def test_round_trip_after_marker(
    n: int, data: st.DataObject, form: str, prefix: str, space: str, boundary: str, tail: str
) -> None:
    letter = data.draw(st.sampled_from(LETTERS[:n]))
    tail = "" if boundary in ("", ".") else tail  # bare "" or "." must end the text
    text = f"{prefix}Answer:{space}{form.format(letter)}{boundary}{tail}"
    assert parse_answer(text, n) == letter


@CHEAP
@given(
    n=st.integers(1, 26),
    data=st.data(),
    form=st.sampled_from(("({})", "{})", "{}.", "**{}**")),
    space=st.sampled_from([" ", "\n", "  "]),
    tail=no_marker.filter(lambda t: _OTHER.search(t) is None),
)
def test_round_trip_leading_label(
    n: int, data: st.DataObject, form: str, space: str, tail: str
) -> None:
    letter = data.draw(st.sampled_from(LETTERS[:n]))
    assert parse_answer(f" {form.format(letter)}{space}{tail}", n) == letter


@pytest.mark.parametrize("text", ["A good point", "I think so", "B is", "Apple", "Ab"])
def test_leading_word_is_no_label(text: str) -> None:
    assert parse_answer(text, 26) is None


@CHEAP
@given(
    n=st.integers(1, 26),
    digit=st.integers(1, 9),
    form=st.sampled_from(FORMS),
    boundary=st.sampled_from(BOUNDARIES),
)
def test_digits_map_to_letters(n: int, digit: int, form: str, boundary: str) -> None:
    expected = LETTERS[digit - 1] if digit <= n else None
    assert parse_answer(f"Answer: {form.format(digit)}{boundary}", n) == expected


@CHEAP
@given(letter=st.sampled_from(string.ascii_lowercase), form=st.sampled_from(FORMS))
def test_lowercase_after_answer_key_is_its_letter(letter: str, form: str) -> None:
    assert parse_answer(f"Answer: {form.format(letter)}", 26) == letter.upper()


@CHEAP
@given(letter=st.sampled_from(string.ascii_lowercase), form=st.sampled_from(FORMS))
def test_lowercase_without_answer_key_is_invalid(letter: str, form: str) -> None:
    assert parse_answer(form.format(letter), 26) is None


@CHEAP
@given(
    texts=st.lists(
        st.one_of(st.text(max_size=30), st.sampled_from(["Answer: B", "(C)", "Answer: 2"])),
        max_size=40,
    ),
    n=st.integers(1, 26),
)
def test_batch_parse_matches_scalar(texts: list[str], n: int) -> None:
    codes = parse_answers(texts, n)
    assert codes.dtype == np.int8
    assert codes.tolist() == [parse_answer_code(t, n) for t in texts]
