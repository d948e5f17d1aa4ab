"""Columnar helpers shared by the builders: items travel as Arrow tables, and builders work on
whole columns (Python lists / numpy arrays), never on per-row objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from nabench.schemas.tables import PERTURBED_ARROW


@dataclass(frozen=True)
class LabelColumns:
    """Label provenance carried onto every perturbed row (all null when unlabeled)."""

    na_applicable: list[bool | None]
    labeler: list[str | None]
    guideline_version: list[str | None]

    @classmethod
    def empty(cls, n: int) -> LabelColumns:
        return cls([None] * n, [None] * n, [None] * n)


@dataclass(frozen=True)
class ItemColumns:
    """Eligible canonical items as columns, the input of every builder."""

    ids: list[str]
    source: list[str]
    subject: list[str | None]
    question: list[str]
    choices: list[list[str]]
    answer: np.ndarray
    labels: LabelColumns

    @classmethod
    def from_table(cls, table: pa.Table, labels: LabelColumns | None = None) -> ItemColumns:
        n = table.num_rows
        return cls(
            ids=table.column("id").to_pylist(),
            source=table.column("source").to_pylist(),
            subject=table.column("subject").to_pylist(),
            question=table.column("question").to_pylist(),
            choices=table.column("choices").to_pylist(),
            answer=table.column("answer").to_numpy().astype(np.int64, copy=False),
            labels=labels or LabelColumns.empty(n),
        )

    def __len__(self) -> int:
        return len(self.ids)


def perturbed_table(
    items: ItemColumns,
    *,
    variant: str,
    choices: list[list[str]],
    answer: np.ndarray | list[int],
    replaced_index: list[int | None] | None,
    na_text: str | None,
    seed: int,
) -> pa.Table:
    """Assemble a perturbed config from new choices/answers plus the traceability columns."""
    n = len(items)
    columns: dict[str, Any] = {
        "id": items.ids,
        "source": items.source,
        "subject": items.subject,
        "question": items.question,
        "choices": choices,
        "answer": np.asarray(answer, dtype=np.int64),
        "variant": [variant] * n,
        "original_answer": items.answer,
        "original_choices": items.choices,
        "replaced_index": replaced_index if replaced_index is not None else [None] * n,
        "na_text": [na_text] * n,
        "seed": np.full(n, seed, dtype=np.int64),
        "na_applicable": items.labels.na_applicable,
        "labeler": items.labels.labeler,
        "guideline_version": items.labels.guideline_version,
    }
    return pa.Table.from_pydict(columns, schema=PERTURBED_ARROW)
