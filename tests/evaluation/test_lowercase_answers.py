"""Lower-case answer letters after an answer key parse as that letter; the same letter used
as an English word (an article, a pronoun) or with no answer key stays invalid."""

from __future__ import annotations

import pytest

from nabench.evaluation.parsing import parse_answer, parse_answers

PARSES = [
    ("Answer: c", "C"),
    ("answer: b", "B"),
    ("Answer: (c)", "C"),
    ("Answer: [d]", "D"),
    ("Answer: **a**", "A"),
    ("**Answer:** d", "D"),
    ("Answer: c.", "C"),
    ("Answer: b)", "B"),
    ("Answer: d. 105", "D"),
    ("Answer: a) the mitochondria", "A"),
    ("Final answer: b\n", "B"),
    ("the answer is (b)", "B"),
    ("The answer is (b) because the enzyme is a kinase.", "B"),
    ("So the correct answer is c.", "C"),
    ("The best option is d", "D"),
    ("I choose (a).", "A"),
    ("Option A looks right, but the answer is (c)", "C"),  # the last statement wins
    ("Answer: c\nQuestion: next one\nAnswer: d", "C"),  # made-up continuation still cut
]

INVALID = [
    "a",  # a bare word, no answer key
    "(c)",
    "c) 105",
    "the answer is a matter of debate",
    "The correct answer is a bit unclear",
    "Answer: a lot depends on the pH",
    "Answer: i think it is close",
    "I choose a different approach",
    "Answer: e.g. the second one",
    "Answer: i.e. none",
    "the reader chooses\n",  # "s" of "chooses" is no letter after a key
    "Answer: (e)",  # beyond n_choices=4
]


@pytest.mark.parametrize(("text", "expected"), PARSES)
def test_lowercase_letter_after_answer_key_parses(text: str, expected: str) -> None:
    assert parse_answer(text, 4) == expected


@pytest.mark.parametrize("text", INVALID)
def test_lowercase_word_is_not_a_letter(text: str) -> None:
    assert parse_answer(text, 4) is None


def test_batch_parse_agrees_on_lowercase() -> None:
    texts = [t for t, _ in PARSES] + INVALID[:4]
    codes = parse_answers(texts, 4).tolist()
    assert codes[: len(PARSES)] == [ord(e) - ord("A") for _, e in PARSES]
    assert codes[len(PARSES) :] == [-1] * 4
