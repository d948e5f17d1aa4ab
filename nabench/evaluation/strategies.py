"""Deterministic reference strategies: answer rules that need the item, not a prompt.

A strategy sees a whole config at once (:class:`ItemBatch`: the options and the gold
index of every item) and returns one 0-based choice per item. The evaluation pipeline
renders each choice as the raw output ``"Answer: X"`` and then parses, scores and
writes it exactly as it does a model's generation, so a reference run and a model run
share every step after the answer is produced.

Registered strategies (``--backend reference --model NAME``):

* ``always-a``: option A for every item.
* ``majority``: the most frequent gold letter of the evaluated config, computed from the
  data (ties: the earliest letter). Its accuracy is the config's majority baseline.
* ``longest``: the option with the most characters (``len`` of the text, ties: the
  earliest option).
* ``oracle``: the gold option (accuracy 1 by construction; a pipeline check).
* ``always-na``: the option whose text is a known "None of the above" phrasing
  (:data:`NA_TEXTS`, compared case- and space-insensitively), else option A. The
  shortcut a model that learned "pick NA" takes: 100 % on ``na_keyed``.
* ``never-na``: the first option that is no NA phrasing (option A unless A is NA).
* ``always-aota``: the "All of the above" option, else option A.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from nabench.core.errors import NabenchError
from nabench.perturb import KNOWN_NA_TEXTS

# The phrasings the NA shortcut strategies recognise: the shipped NA texts and AotA's.
NA_TEXTS = frozenset(t.casefold() for t in KNOWN_NA_TEXTS)
AOTA_TEXTS = frozenset({"all of the above"})

__all__ = [
    "AOTA_TEXTS",
    "NA_TEXTS",
    "STRATEGIES",
    "ItemBatch",
    "Strategy",
    "get_strategy",
    "register_strategy",
    "shortcut_model_ids",
]


@dataclass(frozen=True)
class ItemBatch:
    """The items of one evaluated config, in evaluation order."""

    ids: tuple[str, ...]
    choices: tuple[tuple[str, ...], ...]
    gold: NDArray[np.int64]  # 0-based gold index per item

    def __post_init__(self) -> None:
        n = len(self.ids)
        if len(self.choices) != n or self.gold.shape != (n,):
            raise ValueError("ids, choices and gold must have one entry per item")
        n_choices = np.fromiter((len(c) for c in self.choices), np.int64, count=n)
        if n and (np.any(self.gold < 0) or np.any(self.gold >= n_choices)):
            raise ValueError("gold index outside the item's options")

    @classmethod
    def from_lists(
        cls, ids: Sequence[str], choices: Sequence[Sequence[str]], gold: Sequence[int]
    ) -> ItemBatch:
        return cls(
            tuple(str(i) for i in ids),
            tuple(tuple(str(c) for c in cs) for cs in choices),
            np.asarray(gold, dtype=np.int64).reshape(-1),
        )

    def __len__(self) -> int:
        return len(self.ids)


class Strategy(ABC):
    """A deterministic answer rule over a batch of items."""

    name: ClassVar[str]
    description: ClassVar[str]
    # True for strategies that read the key (oracle) or the key distribution (majority):
    # references, not shortcuts a model could take from the options alone.
    reads_gold: ClassVar[bool] = False

    @abstractmethod
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        """One 0-based option index per item."""

    @property
    def model_id(self) -> str:
        """The name results are filed under (``reference/<name>``)."""
        return f"reference/{self.name}"


S = TypeVar("S", bound=type[Strategy])

STRATEGIES: dict[str, type[Strategy]] = {}


def register_strategy(name: str, description: str) -> Callable[[S], S]:
    """Class decorator: make a strategy available to :func:`get_strategy`."""

    def deco(cls: S) -> S:
        if name in STRATEGIES and STRATEGIES[name] is not cls:
            raise ValueError(f"strategy {name!r} is already registered")
        cls.name = name
        cls.description = description
        STRATEGIES[name] = cls
        return cls

    return deco


def shortcut_model_ids() -> dict[str, str]:
    """Model id (``reference/<name>``) → name of every strategy that answers from the
    options alone, without the key: the shortcuts the report checks configs against."""
    return {f"reference/{n}": n for n, cls in STRATEGIES.items() if not cls.reads_gold}


def get_strategy(name: str) -> Strategy:
    """The strategy registered as ``name``; a :class:`NabenchError` names the known ones."""
    try:
        return STRATEGIES[name]()
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise NabenchError(f"unknown reference strategy {name!r}; known: {known}") from None


@register_strategy("always-a", "option A for every item")
class AlwaysA(Strategy):
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return np.zeros(len(items), dtype=np.int64)


@register_strategy("majority", "the most frequent gold letter of the config (ties: earliest)")
class Majority(Strategy):
    reads_gold = True

    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        if len(items) == 0:
            return np.zeros(0, dtype=np.int64)
        letter = int(np.argmax(np.bincount(items.gold)))  # argmax: first of tied maxima
        return np.full(len(items), letter, dtype=np.int64)


def _longest_index(choices: Sequence[str]) -> int:
    """Index of the longest option; ties go to the earliest."""
    return max(range(len(choices)), key=lambda i: (len(choices[i]), -i))


@register_strategy("longest", "the option with the most characters (ties: earliest)")
class Longest(Strategy):
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return np.fromiter(
            (_longest_index(cs) for cs in items.choices),
            dtype=np.int64,
            count=len(items),
        )


@register_strategy("oracle", "the gold option")
class Oracle(Strategy):
    reads_gold = True

    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return items.gold.astype(np.int64, copy=True)


@functools.lru_cache(maxsize=1 << 18)
def _folded(text: str) -> str:
    """Whitespace collapsed and casefolded (once per distinct text: every config of a build
    repeats the same options)."""
    return " ".join(text.split()).casefold()


def _by_text(items: ItemBatch, texts: frozenset[str], want: bool) -> NDArray[np.int64]:
    """Per item, the index of the first option whose normalised text (whitespace collapsed,
    casefolded) is (``want``) or is not in ``texts``; 0 (option A) when none is. Each
    distinct text is normalised once and the first match is found with numpy: a card scores
    these strategies on every config of a build (per row in Python it was 1 s of a 2.3 s
    full MMLU build)."""
    flat = [c for cs in items.choices for c in cs]
    lengths = np.fromiter((len(cs) for cs in items.choices), dtype=np.int64, count=len(items))
    match = np.fromiter(((_folded(c) in texts) == want for c in flat), bool, count=len(flat))
    row = np.repeat(np.arange(len(items)), lengths)
    within = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    first = np.full(len(items), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, row[match], within[match])
    first[first == np.iinfo(np.int64).max] = 0
    return first


@register_strategy("always-na", "the 'None of the above' option (known phrasings), else A")
class AlwaysNA(Strategy):
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return _by_text(items, NA_TEXTS, True)


@register_strategy("never-na", "the first option that is not 'None of the above'")
class NeverNA(Strategy):
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return _by_text(items, NA_TEXTS, False)


@register_strategy("always-aota", "the 'All of the above' option, else A")
class AlwaysAotA(Strategy):
    def choose(self, items: ItemBatch) -> NDArray[np.int64]:
        return _by_text(items, AOTA_TEXTS, True)
