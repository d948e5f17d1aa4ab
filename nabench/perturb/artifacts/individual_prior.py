"""Individual priors: one prompt per option asking whether that option alone is correct
(4 rows per item, target ``True`` for the gold option, else ``False``).

    Choice: <text>
    Answer: True|False          <- few-shot example (one option of a few-shot item)

    Choice: <c_i>
    Answer:                     <- test example

`prior_choice_with_question` puts ``Question: <q>\\n`` before every ``Choice:`` line.
Few-shot examples are the dataset's few-shot items, one option each, with a balanced number
of True and False examples (see `_fewshot.prior_examples`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from nabench.perturb.artifacts._layout import (
    SEPARATOR,
    FewShotPlan,
    Items,
    PromptType,
    artifact_table,
)


def prior_example(text: str, gold: bool, question: str | None = None) -> str:
    head = "" if question is None else f"Question: {question}\n"
    return f"{head}Choice: {text}\nAnswer: {gold}"


def prior_test(text: str, question: str | None = None) -> str:
    head = "" if question is None else f"Question: {question}\n"
    return f"{head}Choice: {text}\nAnswer:"


@dataclass(frozen=True)
class PriorChoice(PromptType):
    config_name = "prior_choice"
    description = "One option at a time without the question; target True/False."
    stop = "\nChoice:"
    per_choice = True
    shows_question = False

    def _q(self, items: Items, row: int) -> str | None:
        return items.q[row] if self.shows_question else None

    def option_example(self, items: Items, row: int, choice: int, gold: bool) -> str:
        return prior_example(items.opts[row][choice], gold, self._q(items, row))

    def option_test(self, items: Items, row: int, choice: int) -> str:
        return prior_test(items.opts[row][choice], self._q(items, row))

    def build(self, test: Items, pool: Items, plan: FewShotPlan, seed: int) -> pa.Table:
        prefixes = [
            "".join(self.option_example(pool, j, c, g) + SEPARATOR for j, c, g in examples)
            for examples in plan.prior
        ]
        group_ids = [[f"{pool.ids[j]}#{c}" for j, c, _ in examples] for examples in plan.prior]
        n_choices = np.fromiter((len(o) for o in test.opts), dtype=np.int64, count=len(test))
        rows = np.repeat(np.arange(len(test), dtype=np.int64), n_choices)
        starts = np.cumsum(n_choices) - n_choices
        choice_index = np.arange(len(rows), dtype=np.int64) - np.repeat(starts, n_choices)
        gold = choice_index == test.answer[rows]
        ids = [
            f"{item_id}#{c}"
            for item_id, c in zip(
                [test.ids[i] for i in rows.tolist()], choice_index.tolist(), strict=True
            )
        ]
        tests = [
            self.option_test(test, i, c)
            for i, c in zip(rows.tolist(), choice_index.tolist(), strict=True)
        ]
        return artifact_table(
            test,
            rows=rows,
            ids=ids,
            prompt_type=self.config_name,
            prefixes=prefixes,
            group=plan.group,
            tests=tests,
            targets=np.where(gold, "True", "False").tolist(),
            stop=self.stop,
            group_fewshot_ids=group_ids,
            choice_index=choice_index,
            seed=seed,
        )


@dataclass(frozen=True)
class PriorChoiceWithQuestion(PriorChoice):
    config_name = "prior_choice_with_question"
    description = "One option at a time after the question; target True/False."
    stop = "\nQuestion:"
    shows_question = True
