"""Memorization probes: the question and the original gold letter stay, the options lose
their discriminative content. A model that still picks the gold letter recalls the item.

* `mem_no_choices`:    ``Question: <q>\\nAnswer:`` (no option block at all)
* `mem_gold_choices`:  every option line shows the gold option's text, letters unchanged
* `mem_empty_choices`: every option text is empty, each line is ``(A) `` (letter, space)
"""

from __future__ import annotations

from dataclasses import dataclass

from nabench.perturb.artifacts._layout import LETTERS, Items, LetterPrompt, option_block
from nabench.perturb.artifacts.full import full_example, full_test


def _gold_block(items: Items, row: int) -> str:
    opts = items.opts[row]
    return option_block([opts[int(items.answer[row])]] * len(opts))


def _empty_block(items: Items, row: int) -> str:
    return "".join(f"({LETTERS[i]}) \n" for i in range(len(items.opts[row])))


@dataclass(frozen=True)
class MemNoChoices(LetterPrompt):
    config_name = "mem_no_choices"
    description = "Question only, no options; the target is the original gold letter."
    stop = "\nQuestion:"

    def example(self, items: Items, row: int) -> str:
        return f"Question: {items.q[row]}\nAnswer: ({items.letter[row]})"

    def test(self, items: Items, row: int) -> str:
        return f"Question: {items.q[row]}\nAnswer:"


@dataclass(frozen=True)
class MemGoldChoices(LetterPrompt):
    config_name = "mem_gold_choices"
    description = "Every option shows the gold text; the target is the original gold letter."
    stop = "\nQuestion:"

    def example(self, items: Items, row: int) -> str:
        return full_example(items.q[row], _gold_block(items, row), items.letter[row])

    def test(self, items: Items, row: int) -> str:
        return full_test(items.q[row], _gold_block(items, row))


@dataclass(frozen=True)
class MemEmptyChoices(LetterPrompt):
    config_name = "mem_empty_choices"
    description = "Every option text is empty; the target is the original gold letter."
    stop = "\nQuestion:"

    def example(self, items: Items, row: int) -> str:
        return full_example(items.q[row], _empty_block(items, row), items.letter[row])

    def test(self, items: Items, row: int) -> str:
        return full_test(items.q[row], _empty_block(items, row))
