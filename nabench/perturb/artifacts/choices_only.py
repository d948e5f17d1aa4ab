"""`choices_only`: the options without any question, few-shot examples included — the
"Artifacts or Abduction" probe: accuracy above the majority baseline means the options alone
carry a usable signal.

    Choices:
    (A) ...
    (D) ...
    Answer: (<L>)
"""

from __future__ import annotations

from dataclasses import dataclass

from nabench.perturb.artifacts._layout import Items, LetterPrompt


@dataclass(frozen=True)
class ChoicesOnly(LetterPrompt):
    config_name = "choices_only"
    description = "Options only: no question anywhere in the prompt (few-shot examples included)."
    stop = "\nChoices:"
    shows_question = False

    def example(self, items: Items, row: int) -> str:
        return f"Choices:\n{items.block[row]}Answer: ({items.letter[row]})"

    def test(self, items: Items, row: int) -> str:
        return f"Choices:\n{items.block[row]}Answer:"
