"""`full`: the standard MCQA prompt (question and options), the baseline every probe is
compared with.

    Question: <q>
    Choices:
    (A) ...
    (D) ...
    Answer: (<L>)        <- few-shot example; the test example ends with "Answer:"
"""

from __future__ import annotations

from dataclasses import dataclass

from nabench.perturb.artifacts._layout import Items, LetterPrompt


def full_example(question: str, block: str, letter: str) -> str:
    return f"Question: {question}\nChoices:\n{block}Answer: ({letter})"


def full_test(question: str, block: str) -> str:
    return f"Question: {question}\nChoices:\n{block}Answer:"


@dataclass(frozen=True)
class Full(LetterPrompt):
    config_name = "full"
    description = "Question and options (the standard prompt; the control for every probe)."
    stop = "\nQuestion:"

    def example(self, items: Items, row: int) -> str:
        return full_example(items.q[row], items.block[row], items.letter[row])

    def test(self, items: Items, row: int) -> str:
        return full_test(items.q[row], items.block[row])
