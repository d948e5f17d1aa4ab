"""Parse a model's raw generation into a choice letter (or a True/False judgement).

Rule for :func:`parse_answer` (letters are uppercase ``A``–``Z``; digits ``1``–``9`` map
to letters, 1 → A):

1. **Cut a made-up continuation.** A base model often writes its answer, then a new
   ``Question: … Answer: X`` block. Text from the first line starting ``Question:``
   after the first answer statement is dropped.
2. **The last answer statement wins.** A statement is one of: ``Answer: X`` (the
   prompt's form; also ``Final answer: X``), ``the (correct|best) answer/option/choice
   is X``, ``answer is X``, ``I choose/pick/select/go with X``, ``X is correct`` /
   ``option X is the correct answer``, ``\\boxed{X}``. ``X`` may be wrapped as
   ``(X)``, ``[X]``, ``**X**``, ``X)``, ``X.``, ``X:``, and may be followed by the
   option's text (``Answer: D. 105``). Digits count only after ``Answer:``
   (``the answer is 4`` is a number, not option D). Chain-of-thought discussion names
   several letters; the last statement is the conclusion.
3. **Otherwise the text must start with a label**: ``D``, ``(D) 105``, ``D) …``,
   ``D. 105``, ``**D**``, ``D, because …`` — but not a word (``A good point``,
   ``I think …``), and not when another option label (``B.``, ``(C)``) follows: that is
   an echo of the options, not an answer.
4. Anything else, and a letter or digit beyond ``n_choices``, is invalid (``None``),
   kept distinct from a wrong letter; :mod:`nabench.evaluation.scoring` gives it the
   invalid credit.

Lowercase letters count only right after an answer statement's key (``Answer: c``,
``the answer is (b)``, ``I choose d.``) and only in a form no English word takes: wrapped
(``(c)``, ``[c]``, ``**c**``), alone at the end of a line (``c``, ``c.``, ``c)``), or as a
label before the option's text (``c. 105``, ``b) 105``). ``the answer is a matter of taste``
and a bare leading ``a`` stay invalid (``a``/``i`` are English words far more often).
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
_LETTERS = string.ascii_uppercase

# A label token: openers, the letter, then a break: the end, whitespace, a closer or
# punctuation, or "." / ":" before one of those. So "3.5", "Apple", "A/B" are no tokens.
_OPEN = r"(?:[(\[*_$]|\\boxed\{|\\text(?:bf)?\{)*"
_BREAK = r"$|[\s)\]}*_$,;:!?\"'’]"
_END = rf"(?={_BREAK}|[.:](?={_BREAK}|\.))"


def _token(chars: str) -> str:
    return rf"{_OPEN}(?P<tok>[{chars}]){_END}"


_SEP = r"[\s:：=*#>\-–—]*"
_COLON_KEY = r"(?i:(?:final\s+)?answer\s*[:：])"
_PROSE_KEY = (
    r"(?i:\b(?:(?:the\s+)?(?:final|correct|right|best)\s+(?:answer|option|choice)"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be))?(?:\s+(?:option|choice))?"
    r"|answer\s+(?:is|would\s+be|should\s+be)(?:\s+(?:option|choice))?"
    r"|(?:choose|pick|select|go\s+with)(?:\s+(?:option|choice))?))"
)
# A lowercase letter after a key, in a form an article or pronoun never takes (module doc).
_LOWER_FORMS = (
    r"\((?P<tok>[a-z])\)",
    r"\[(?P<tok>[a-z])\]",
    r"\*\*(?P<tok>[a-z])\*\*",
    r"(?P<tok>[a-z])[.):]?(?=[ \t*]*(?:\n|\Z))",
    r"(?P<tok>[a-z])[.):](?=[ \t]+\S)",
)
_LOWER_STATEMENTS = tuple(
    re.compile(key + _SEP + r"(?<![A-Za-z0-9])" + form + r"(?![A-Za-z0-9])")
    for key in (_COLON_KEY, _PROSE_KEY)
    for form in _LOWER_FORMS
)
_STATEMENTS = (
    *_LOWER_STATEMENTS,
    re.compile(_COLON_KEY + _SEP + _token("A-Z1-9")),
    re.compile(_PROSE_KEY + _SEP + _token("A-Z")),
    re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{)?(?P<tok>[A-Z])\b"),
    re.compile(
        r"(?<![A-Za-z0-9])(?i:option\s+|choice\s+)?"
        + _token("A-Z")
        + r"\s+(?i:is|would\s+be)\s+(?i:the\s+)?(?i:correct|right|best)\b"
    ),
)
_CONTINUATION = re.compile(r"\n\s*Question\s*:")
_LEADING = re.compile(
    r"\s*(?:[*_#>]+\s*)?"
    r"(?:\((?P<p>[A-Z1-9])\)|(?P<b>[A-Z1-9])(?:[.):](?=$|\s|[*_])|(?=[*_]*\s*(?:$|\n))"
    r"|(?=[,;!])|(?=\s+[-–—]\s)|(?=[*_])))"
)
_LABEL = re.compile(r"(?:^|(?<=\s))(?:\((?P<p>[A-Z])\)|(?P<b>[A-Z])[.)])(?=\s|$)")
_BOOL = re.compile(
    r"(?>(?:.*?(?ai:answer:))?)\s*(?P<word>(?ai:true|false))(?![A-Za-z0-9_])",
    re.DOTALL,
)


def _check_n_choices(n_choices: int) -> None:
    if not 1 <= n_choices <= MAX_CHOICES:
        raise ValueError(f"n_choices must be in 1..{MAX_CHOICES}, got {n_choices}")


def _code(ch: str, n_choices: int) -> int:
    code = int(ch) - 1 if ch.isdigit() else ord(ch.upper()) - ord("A")
    return code if code < n_choices else INVALID


def _statements(text: str) -> list[tuple[int, int, str]]:
    return sorted(
        (m.start(), m.end(), m.group("tok")) for p in _STATEMENTS for m in p.finditer(text)
    )


def _cut_continuation(text: str) -> str:
    """``text`` up to a made-up ``Question:`` block after the first answer-like token."""
    ends = [end for _, end, _ in _statements(text)]
    lead = _LEADING.match(text)
    if lead is not None:
        ends.append(lead.end())
    cut = _CONTINUATION.search(text, min(ends)) if ends else None
    return text[: cut.start()] if cut else text


def _leading_label(text: str) -> str | None:
    m = _LEADING.match(text)
    if m is None:
        return None
    tok = m.group("p") or m.group("b")
    others = {x.group("p") or x.group("b") for x in _LABEL.finditer(text, m.end())}
    return None if others - {tok} else tok


def parse_answer_code(text: str, n_choices: int = 4) -> int:
    """0-based choice index parsed from ``text``, or ``INVALID`` (-1)."""
    _check_n_choices(n_choices)
    text = _cut_continuation(text)
    found = _statements(text)
    tok = found[-1][2] if found else _leading_label(text)
    return INVALID if tok is None else _code(tok, n_choices)


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

    If the text contains ``Answer:``, what follows its first occurrence; the first word
    must be ``true`` or ``false`` (case-insensitive: unlike letters, these words are
    unambiguous).
    """
    m = _BOOL.match(text)
    if m is None:
        return None
    return m.group("word").lower() == "true"
