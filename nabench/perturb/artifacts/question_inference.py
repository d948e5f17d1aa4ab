"""Question inference (two steps): can a model recover the question from the options alone?

Step 1 (`qi_step1`, built offline): few-shot examples list the options first, then the
question, then the answer; the test example is the option block followed by ``Question:``
and the model writes a question (stop ``\\nChoices:``)::

    Choices:
    (A) ...
    (D) ...
    Question: <q>
    Answer: (<L>)           <- few-shot example

    Choices:
    (A) ...
    (D) ...
    Question:               <- test example: the model continues here

The inferred question is the generated text before ``Answer:``, stripped (none when
``Answer:`` is absent or nothing precedes it). Step 2 (`qi_step2`) is the `full` prompt in
which only the test example's question is replaced by the inferred one; the control
`qi_random_question` inserts another test item's real question (a seeded derangement).
Both are built by `nabench.pipelines.question_inference` after a model ran step 1.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from nabench.perturb.artifacts._layout import (
    ARTIFACT_ARROW,
    TEXT_MODES,
    Items,
    LetterPrompt,
    TextMode,
    option_block,
)
from nabench.perturb.artifacts.full import full_test
from nabench.schemas import arrow_schema

STEP2_STOP = "\nQuestion:"
# Extra columns of the step-2 configs: the question actually shown, and whose it is.
_STEP2 = arrow_schema("artifact_inserted")
STEP2_EXTRA = pa.schema(list(_STEP2)[len(ARTIFACT_ARROW) :])


@dataclass(frozen=True)
class QIStep1(LetterPrompt):
    config_name = "qi_step1"
    description = "Options first, then the model writes the question (step 1 of 2; no target)."
    stop = "\nChoices:"

    def example(self, items: Items, row: int) -> str:
        return (
            f"Choices:\n{items.block[row]}Question: {items.q[row]}\nAnswer: ({items.letter[row]})"
        )

    def test(self, items: Items, row: int) -> str:
        return f"Choices:\n{items.block[row]}Question:"

    def target(self, items: Items, row: int) -> str | None:
        return None


def extract_inferred_question(completion: str) -> str | None:
    """The question a step-1 completion wrote: the text before ``Answer:``, stripped.

    None when ``Answer:`` is absent (the model did not finish a question) or nothing but
    whitespace precedes it.
    """
    head, sep, _ = completion.partition("Answer:")
    if not sep:
        return None
    question = head.strip()
    return question or None


def seeded_derangement(n: int, rng: random.Random) -> list[int]:
    """A uniformly random permutation of range(n) with no fixed point (rejection sampling)."""
    if n < 2:
        raise ValueError(f"a derangement needs at least 2 items, got {n}")
    order = list(range(n))
    while True:
        rng.shuffle(order)
        if all(i != j for i, j in enumerate(order)):
            return order


def replace_test_question(
    full: pa.Table,
    questions: Sequence[str | None],
    sources: Sequence[str | None],
    prompt_type: str,
    *,
    text: TextMode = "stripped",
    keep_missing: bool = False,
) -> pa.Table:
    """`full` rows whose test example shows `questions[i]` instead of the item's question.

    Only the test example changes: the prompt's few-shot prefix is kept byte for byte. Rows
    whose question is None are left out, or with `keep_missing` kept with an empty question
    and null `inserted_question` / `inserted_from` (one row per step-1 row; the
    `artifacts-paper` protocol scores them as invalid). `sources[i]` is the id of the item
    the inserted question comes from (the row's own id for step 2). `text` is how the build
    showed source text (`stripped` or `raw`); an inferred question is always stripped.
    """
    shown = TEXT_MODES[text]
    if full.num_rows != len(questions) or len(questions) != len(sources):
        raise ValueError("full, questions and sources must have the same length")
    prompts = full.column("prompt").to_pylist()
    own = full.column("question").to_pylist()
    choices = full.column("choices").to_pylist()
    ids = full.column("id").to_pylist()
    keep: list[int] = []
    new_prompts: list[str] = []
    inserted: list[str | None] = []
    for i, (prompt, q, cs, new_q) in enumerate(zip(prompts, own, choices, questions, strict=True)):
        if new_q is None and not keep_missing:
            continue
        block = option_block([shown(c) for c in cs])
        tail = full_test(shown(q), block)
        if not prompt.endswith(tail):
            raise ValueError(f"{ids[i]}: prompt does not end with its full test example")
        # A real question (the random control) is shown like every source text; an inferred
        # one is model output, stripped.
        new_text = (
            None if new_q is None else (new_q.strip() if sources[i] == ids[i] else shown(new_q))
        )
        new_prompts.append(prompt[: len(prompt) - len(tail)] + full_test(new_text or "", block))
        inserted.append(new_text)
        keep.append(i)
    idx = pa.array(np.asarray(keep, dtype=np.int64))
    out = full.select(ARTIFACT_ARROW.names).take(idx)
    out = out.set_column(
        out.schema.get_field_index("prompt"), "prompt", pa.array(new_prompts, pa.string())
    )
    n = out.num_rows
    out = out.set_column(
        out.schema.get_field_index("prompt_type"),
        "prompt_type",
        pa.array([prompt_type] * n, pa.string()),
    )
    out = out.set_column(
        out.schema.get_field_index("stop"), "stop", pa.array([STEP2_STOP] * n, pa.string())
    )
    out = out.append_column("inserted_question", pa.array(inserted, pa.string()))
    origin = [None if questions[i] is None else sources[i] for i in keep]
    return out.append_column("inserted_from", pa.array(origin, pa.string()))


def grouped_derangement(groups: Sequence[str | None], rng: random.Random) -> list[int]:
    """A permutation with no fixed point that maps every item to another item of its own
    group (subject) where the group has at least 2 items; single items are deranged among
    themselves (or, if only one is left, joined to the largest group)."""
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g or "", []).append(i)
    blocks = [rows for rows in members.values() if len(rows) > 1]
    singles = [rows[0] for rows in members.values() if len(rows) == 1]
    if len(singles) == 1 and blocks:
        max(blocks, key=len).append(singles.pop())
    if singles:
        blocks.append(singles)
    perm = list(range(len(groups)))
    for rows in sorted(blocks, key=lambda r: r[0]):  # a fixed order: one rng stream
        order = seeded_derangement(len(rows), rng)
        for i, j in zip(rows, order, strict=True):
            perm[i] = rows[j]
    return perm
