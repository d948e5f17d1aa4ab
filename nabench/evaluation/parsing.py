"""Parse a model's raw generation into a choice letter (or a True/False judgement).

Rule for :func:`parse_answer`, applied in this order:

1. If the text contains ``Answer:`` (ASCII case-insensitive), keep only what follows
   its FIRST occurrence; otherwise keep the whole text. First, not last: a base model
   that keeps generating after its answer often writes a further made-up
   ``Question: ... Answer: X`` block, and that later answer is not the model's answer.
2. Skip leading whitespace and read exactly one token, in one of the forms
   ``(X)``, ``X)``, ``X.``, ``X`` where ``X`` is an uppercase letter ``A``–``Z`` or a
   digit ``1``–``9``. The token must end the text or be followed by whitespace,
   one of ``, ; : ! ? * " ]``, or a ``.`` that itself ends the text or precedes
   whitespace. So ``"2.5"``, ``"Apple"`` and ``"A/B"`` are not tokens.
3. Digits map to letters (1 → A, 2 → B, …). A letter or digit beyond ``n_choices``
   is invalid (``None``).

Conventions chosen:

* Lowercase letters are invalid: ``"Answer: a"`` is ``None``, because ``a``/``i``
  are English words ("a cat", "i think") far more often than labels.
* The uppercase pronoun ``I`` and article ``A`` are indistinguishable from option
  labels. ``"Answer: I think"`` is ``None`` for ``n_choices < 9`` only because ``I`` is
  out of range; ``"Answer: A good point"`` parses as ``A``. Prompts ask for the letter
  right after ``Answer:``, so this ambiguity is inherent to the protocol.
* Nothing else is tried (no "the answer is", no markdown ``**B**``): anything else is
  invalid and gets the invalid credit in :mod:`nabench.evaluation.scoring`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = [
    "INVALID",
    "MAX_CHOICES",
    "codes_to_letters",
    "letters_to_codes",
    "parse_answer",
    "parse_answer_code",
    "parse_answers",
    "parse_bool",
]

MAX_CHOICES = 26
INVALID = -1  # integer code of an invalid (unparseable) answer

# The atomic group `(?>...)` commits to the FIRST "answer:" when there is one, so a bad
# token after it can't make the regex retry from a later "answer:" or from the start.
_ANSWER = re.compile(
    r"(?>(?:.*?(?ai:answer:))?)\s*"
    r"(?:\((?P<paren>[A-Z1-9])\)|(?P<bare>[A-Z1-9])[.)]?)"
    r"(?=$|[\s,;:!?*\"\]]|\.(?:$|\s))",
    re.DOTALL,
)
_BOOL = re.compile(
    r"(?>(?:.*?(?ai:answer:))?)\s*(?P<word>(?ai:true|false))(?![A-Za-z0-9_])",
    re.DOTALL,
)
_LETTERS = string.ascii_uppercase


def _check_n_choices(n_choices: int) -> None:
    if not 1 <= n_choices <= MAX_CHOICES:
        raise ValueError(f"n_choices must be in 1..{MAX_CHOICES}, got {n_choices}")


def parse_answer_code(text: str, n_choices: int = 4) -> int:
    """0-based choice index parsed from ``text``, or ``INVALID`` (-1)."""
    _check_n_choices(n_choices)
    m = _ANSWER.match(text)
    if m is None:
        return INVALID
    ch = m.group("paren") or m.group("bare")
    code = int(ch) - 1 if ch.isdigit() else ord(ch) - ord("A")
    return code if code < n_choices else INVALID


def parse_answer(text: str, n_choices: int = 4) -> str | None:
    """Choice letter parsed from ``text`` (see module docstring), or None if invalid."""
    code = parse_answer_code(text, n_choices)
    return None if code == INVALID else _LETTERS[code]


def parse_answers(texts: Sequence[str] | Iterable[str], n_choices: int = 4) -> NDArray[np.int8]:
    """Batch form of :func:`parse_answer_code`: int8 codes, ``INVALID`` for invalid.

    Raw generations repeat a lot ("Answer: B"), so each distinct string is parsed once
    (``pandas.factorize`` hashes in C) and the codes are broadcast back.
    """
    _check_n_choices(n_choices)
    values = texts if isinstance(texts, list | tuple | np.ndarray) else list(texts)
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    lut = np.fromiter(
        (parse_answer_code(u, n_choices) for u in uniques), dtype=np.int8, count=len(uniques)
    )
    return lut[codes]


def letters_to_codes(letters: Iterable[str | None]) -> NDArray[np.int8]:
    """Letters ``A``.. to 0-based int8 codes; None becomes ``INVALID``."""
    out = [INVALID if x is None else _letter_code(x) for x in letters]
    return np.asarray(out, dtype=np.int8)


def _letter_code(letter: str) -> int:
    if len(letter) != 1 or letter not in _LETTERS:
        raise ValueError(f"not a choice letter: {letter!r}")
    return ord(letter) - ord("A")


def codes_to_letters(codes: Iterable[int]) -> list[str | None]:
    """Inverse of :func:`letters_to_codes`."""
    return [None if int(c) == INVALID else _LETTERS[int(c)] for c in codes]


def parse_bool(text: str) -> bool | None:
    """True/False judgement for individual-prior prompts, or None if invalid.

    Same ``Answer:`` rule as :func:`parse_answer`; the first word must be ``true`` or
    ``false`` (case-insensitive: unlike letters, these words are unambiguous).
    """
    m = _BOOL.match(text)
    if m is None:
        return None
    return m.group("word").lower() == "true"
