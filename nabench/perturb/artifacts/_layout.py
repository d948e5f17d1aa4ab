"""Shared pieces of every artifact prompt: the option block, the columnar item view, the
few-shot plan, and the assembly of (few-shot prefix + test example) into an Arrow table.

Layout conventions (all prompt families):

* Question and option texts are used with surrounding whitespace stripped (`str.strip()`,
  text mode `stripped`, the default), so a source question ending in a newline cannot break
  the block structure; the text inside is kept exactly. Text mode `raw` (the
  `artifacts-paper` protocol) uses them exactly as the source has them, as the authors did.
* The option block is one line per option, ``(A) <text>`` ... ``(D) <text>``, joined by a
  newline, with a newline after the last option.
* A prompt is the few-shot examples and then the test example, separated by a blank line
  (``\\n\\n``). Examples of one few-shot group share one prefix string, built once per group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.schemas import arrow_schema

LETTERS = "ABCDEFGHIJ"
SEPARATOR = "\n\n"

# How a source text is shown in a prompt: `stripped` (nabench) or `raw` (as the source has it).
TextMode = Literal["stripped", "raw"]
TEXT_MODES: dict[str, Callable[[str], str]] = {"stripped": str.strip, "raw": lambda t: t}

_STR = pa.string()
_LIST_STR = pa.list_(pa.string())

# Columns of every artifact config (in this order): derived from `schemas.rows.ArtifactPrompt`.
ARTIFACT_ARROW = arrow_schema("artifact")


_ITEM_NAMES = ("source", "subject", "question", "choices", "answer")
_ITEM_NAMES_WITH_ID = ("id", *_ITEM_NAMES)


def option_block(texts: Sequence[str]) -> str:
    """``(A) t0\\n(B) t1\\n...`` with a newline after the last option (texts used as given)."""
    return "".join(f"({LETTERS[i]}) {t}\n" for i, t in enumerate(texts))


@dataclass(frozen=True)
class Items:
    """Canonical items as columns, with stripped texts and the option block precomputed once."""

    ids: list[str]
    source: list[str]
    subject: list[str | None]
    question: list[str]  # canonical (unstripped) question, carried to the output
    choices: list[list[str]]  # canonical (unstripped) choices, carried to the output
    answer: np.ndarray
    q: list[str]  # stripped question, used in prompts
    opts: list[list[str]]  # stripped choices, used in prompts
    block: list[str]  # option block of the stripped choices
    letter: list[str]  # gold letter
    table: pa.Table  # the canonical item table itself

    @classmethod
    def from_table(cls, table: pa.Table, text: TextMode = "stripped") -> Items:
        question = table.column("question").to_pylist()
        choices = table.column("choices").to_pylist()
        answer = table.column("answer").to_numpy().astype(np.int64, copy=False)
        shown = TEXT_MODES[text]
        opts = [[shown(c) for c in cs] for cs in choices]
        return cls(
            ids=table.column("id").to_pylist(),
            source=table.column("source").to_pylist(),
            subject=table.column("subject").to_pylist(),
            question=question,
            choices=choices,
            answer=answer,
            q=[shown(q) for q in question],
            opts=opts,
            block=[option_block(o) for o in opts],
            letter=[LETTERS[a] for a in answer.tolist()],
            table=table.select(list(_ITEM_NAMES_WITH_ID)).combine_chunks(),
        )

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class FewShotPlan:
    """Which few-shot examples every test item gets.

    Test item `i` belongs to group `group[i]`; a group's examples are the pool rows
    `rows[g]` in prompt order. For the individual-prior prompts each example shows one
    option: `prior[g]` lists (pool row, choice index, is_gold) triples.
    """

    group: np.ndarray
    keys: list[str]  # group key (the subject, "" when there is none)
    rows: list[list[int]]
    prior: list[list[tuple[int, int, bool]]]

    @property
    def k(self) -> int:
        sizes = {len(r) for r in self.rows}
        return sizes.pop() if len(sizes) == 1 else -1


class PromptType(ABC):
    """One artifact prompt type (one output config); subclasses are frozen dataclasses."""

    config_name: ClassVar[str]
    description: ClassVar[str]
    stop: ClassVar[str]
    per_choice: ClassVar[bool] = False
    # whether its prompts show an item's question (a test item's or a few-shot example's):
    # an item without one cannot be built into them
    shows_question: ClassVar[bool] = True

    @abstractmethod
    def build(self, test: Items, pool: Items, plan: FewShotPlan, seed: int) -> pa.Table:
        """The config's rows for every test item, in input order."""


class LetterPrompt(PromptType):
    """A prompt per item whose few-shot examples end with ``Answer: (<L>)``.

    `example` renders a few-shot example (ending with the answer), `test` the test example
    (ending where the model must continue). Both apply the same transformation.
    """

    @abstractmethod
    def example(self, items: Items, row: int) -> str: ...

    @abstractmethod
    def test(self, items: Items, row: int) -> str: ...

    def target(self, items: Items, row: int) -> str | None:
        return items.letter[row]

    def build(self, test: Items, pool: Items, plan: FewShotPlan, seed: int) -> pa.Table:
        """One row per test item; the prefix of each few-shot group is rendered once and the
        concatenation prefix + test example runs in Arrow."""
        prefixes = ["".join(self.example(pool, j) + SEPARATOR for j in rows) for rows in plan.rows]
        group_ids = [[pool.ids[j] for j in rows] for rows in plan.rows]
        n = len(test)
        return artifact_table(
            test,
            rows=np.arange(n, dtype=np.int64),
            ids=test.ids,
            prompt_type=self.config_name,
            prefixes=prefixes,
            group=plan.group,
            tests=[self.test(test, i) for i in range(n)],
            targets=[self.target(test, i) for i in range(n)],
            stop=self.stop,
            group_fewshot_ids=group_ids,
            choice_index=None,
            seed=seed,
        )


def artifact_table(
    items: Items,
    *,
    rows: np.ndarray,
    ids: list[str],
    prompt_type: str,
    prefixes: list[str],
    group: np.ndarray,
    tests: list[str],
    targets: list[str | None],
    stop: str,
    group_fewshot_ids: list[list[str]],
    choice_index: np.ndarray | None,
    seed: int,
) -> pa.Table:
    """Assemble an artifact config. Output row r is about test item `rows[r]`, uses the
    few-shot group `group[rows[r]]` and has the prompt prefixes[group] + tests[r]."""
    n = len(rows)
    take = pa.array(rows, pa.int64())
    row_group = pa.array(group[rows] if n else np.zeros(0, np.int64), pa.int64())
    prompts = pc.binary_join_element_wise(
        pa.array(prefixes, _STR).take(row_group), pa.array(tests, _STR), pa.scalar("", _STR)
    )
    base = items.table.take(take)
    columns: dict[str, Any] = {
        "id": pa.array(ids, _STR),
        "item_id": base.column("id"),
        "prompt_type": pa.array([prompt_type] * n, _STR),
        "prompt": prompts,
        "target": pa.array(targets, _STR),
        "stop": pa.array([stop] * n, _STR),
        "fewshot_ids": pa.array(group_fewshot_ids, _LIST_STR).take(row_group),
        "choice_index": pa.nulls(n, pa.int64())
        if choice_index is None
        else pa.array(choice_index, pa.int64()),
        **{name: base.column(name) for name in _ITEM_NAMES},
        "seed": pa.array(np.full(n, seed, dtype=np.int64)),
    }
    return pa.Table.from_pydict(columns, schema=ARTIFACT_ARROW)
