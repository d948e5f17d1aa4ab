"""Answer rules by name, so a protocol preset can pick how an output becomes a choice.

* ``nabench``: :func:`nabench.evaluation.parsing.parse_answer_code` (the tolerant rule).
* ``authors_prefix``: the "Artifacts or Abduction" authors' rule. The completion after
  ``Answer:`` counts only if ``(L)`` (an uppercase letter) or ``(d)`` (a digit, 1 -> A) lies
  within its first ``window`` (4) characters; anything else — `` B``, `` B.``, `` true``,
  ``(B`` — is invalid, and the protocol scores invalid outputs 0.25.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from nabench.core.errors import NabenchError
from nabench.evaluation.parsing import INVALID, parse_answer_code

_PAREN = re.compile(r"\((?P<label>[A-Z0-9])\)")

AnswerRule = Callable[[str, int], int]


def authors_prefix_code(text: str, n_choices: int = 4, window: int = 4) -> int:
    """0-based choice of a completion under the authors' rule, or ``INVALID``."""
    m = _PAREN.search(text[:window])
    if m is None:
        return INVALID
    label = m.group("label")
    code = int(label) - 1 if label.isdigit() else ord(label) - ord("A")
    return code if 0 <= code < n_choices else INVALID


ANSWER_RULES: dict[str, AnswerRule] = {
    "nabench": parse_answer_code,
    "authors_prefix": authors_prefix_code,
}


def answer_rule(name: str) -> AnswerRule:
    if name not in ANSWER_RULES:
        raise NabenchError(f"unknown answer rule {name!r} (known: {', '.join(ANSWER_RULES)})")
    return ANSWER_RULES[name]


def parse_with(name: str, texts: Iterable[str], n_choices: int = 4) -> NDArray[np.int8]:
    """int8 codes of every text under the named rule (``INVALID`` for invalid)."""
    rule = answer_rule(name)
    return np.fromiter((rule(t, n_choices) for t in texts), dtype=np.int8)
