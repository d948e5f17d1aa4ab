"""Answer parser: fixed examples, then hypothesis properties."""

from __future__ import annotations

import re
import string

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("Answer: (B) because A is wrong", 4, "B"),
        ("Answer: A", 4, "A"),
        ("Answer: I think it's B", 4, None),  # "I" is a token but beyond D
        ("Answer: I think it's B", 10, "I"),  # ...and a valid label with 10 choices
        ("Answer: a", 4, None),  # lowercase is never a label
        ("Answer: (c)", 4, None),
        ("answer: c", 4, None),
        ("ANSWER:D", 4, "D"),  # marker is case-insensitive, no space needed
        ("Answer:\n\n  C)", 4, "C"),
        ("Answer: (C).", 4, "C"),
        ("Answer: C.", 4, "C"),
        ("Answer: C, since", 4, "C"),
        ("Answer: (3)", 4, "C"),
        ("Answer: 4.", 4, "D"),
        ("Answer: (5)", 4, None),  # digit beyond n_choices
        ("Answer: (0)", 4, None),
        ("Answer: 10", 10, None),  # two digits are not a single token
        ("Answer: 2.5", 4, None),
        ("Answer: A.5", 4, None),
        ("Answer: Apple", 4, None),
        ("Answer: A/B", 4, None),
        ("Answer: E", 4, None),
        ("Answer: E", 5, "E"),
        ("Answer: **B**", 4, None),  # no markdown stripping
        ("Answer: B**", 4, "B"),
        ("The answer is B", 4, None),  # no marker: whole text, first token "The"
        ("B", 4, "B"),
        ("  (D) seems right", 4, "D"),
        ("", 4, None),
        ("Answer:", 4, None),
        # FIRST marker wins, even if what follows it is invalid.
        ("Answer: B\nQuestion: ...\nAnswer: C", 4, "B"),
        ("Answer: unsure. Answer: C", 4, None),
        ("B. Answer: C", 4, "C"),  # marker present: text before it is ignored
    ],
)
def test_parse_answer_examples(text: str, n: int, expected: str | None) -> None:
    assert parse_answer(text, n) == expected


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


@given(text=st.text(), n=st.integers(1, 26))
def test_parser_never_raises(text: str, n: int) -> None:
    letter = parse_answer(text, n)
    assert letter is None or (len(letter) == 1 and LETTERS.index(letter) < n)
    assert parse_answer_code(text, n) == (INVALID if letter is None else LETTERS.index(letter))
    assert parse_bool(text) in (True, False, None)


no_marker = st.text().filter(lambda s: _MARKER.search(s) is None)


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


@given(
    n=st.integers(1, 26),
    data=st.data(),
    form=st.sampled_from(FORMS),
    boundary=st.sampled_from(BOUNDARIES),
    tail=no_marker,
)
def test_round_trip_without_marker(
    n: int, data: st.DataObject, form: str, boundary: str, tail: str
) -> None:
    letter = data.draw(st.sampled_from(LETTERS[:n]))
    tail = "" if boundary in ("", ".") else tail
    assert parse_answer(f" {form.format(letter)}{boundary}{tail}", n) == letter


@given(
    n=st.integers(1, 26),
    digit=st.integers(1, 9),
    form=st.sampled_from(FORMS),
    boundary=st.sampled_from(BOUNDARIES),
)
def test_digits_map_to_letters(n: int, digit: int, form: str, boundary: str) -> None:
    expected = LETTERS[digit - 1] if digit <= n else None
    assert parse_answer(f"Answer: {form.format(digit)}{boundary}", n) == expected


@given(letter=st.sampled_from(string.ascii_lowercase), form=st.sampled_from(FORMS))
def test_lowercase_is_invalid(letter: str, form: str) -> None:
    assert parse_answer(f"Answer: {form.format(letter)}", 26) is None


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
