"""The authors' answer rule of "Artifacts or Abduction": `(L)` / `(digit)` within the first 4
characters of the completion, anything else invalid."""

from __future__ import annotations

import pytest

from nabench.evaluation.answer_rules import ANSWER_RULES, authors_prefix_code, parse_with
from nabench.evaluation.parsing import INVALID

CASES = [
    (" (B)", 1),
    ("(B)", 1),
    ("(D) 105", 3),
    (" (2)", 1),  # a digit label maps 1 -> A
    ("  (C)", INVALID),  # the whole "(C)" must lie in the first 4 characters
    (" B", INVALID),
    (" B.", INVALID),
    (" true", INVALID),
    (" (B", INVALID),
    ("   (B)", INVALID),  # starts after the first 4 characters
    ("The answer is (B)", INVALID),
    (" (b)", INVALID),
    (" (E)", INVALID),  # out of range for 4 options
    ("", INVALID),
]


@pytest.mark.parametrize(("text", "code"), CASES)
def test_authors_prefix_rule(text: str, code: int) -> None:
    assert authors_prefix_code(text, 4) == code


def test_rules_are_registered_and_batch_parse() -> None:
    assert set(ANSWER_RULES) == {"nabench", "authors_prefix"}
    codes = parse_with("authors_prefix", [" (A)", " A", "(C)"], 4)
    assert codes.tolist() == [0, INVALID, 2]
    # The tolerant nabench rule accepts what the authors' rule refuses.
    assert parse_with("nabench", [" B."], 4).tolist() == [1]
