"""MMLU (`cais/mmlu`): 57 subjects, 4 options, integer (ClassLabel) answers."""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa

from nabench.sources._base import (
    Source,
    check_answers,
    check_present,
    item_table,
    require_columns,
)


class MMLU(Source):
    name = "mmlu"
    hub_id = "cais/mmlu"
    default_config = "all"
    splits = ("test", "validation", "dev", "auxiliary_train")
    license = "mit"
    pretty_name = "MMLU"
    field_notes: ClassVar[dict[str, str]] = {
        "id": "`mmlu/<config>/<split>/<row>`: the row's 0-based position in its source split, "
        "5 digits (e.g. `mmlu/all/test/00123`).",
        "source": "Always `mmlu`.",
        "subject": "MMLU subject, one of its 57 (e.g. `abstract_algebra`; a recipe's "
        "`exclude_subjects` are in no perturbed config).",
        "question": "The question text.",
        "choices": "The 4 options in source order.",
    }
    citation = (
        "@inproceedings{hendrycks2021measuring,\n"
        "  title={Measuring Massive Multitask Language Understanding},\n"
        "  author={Dan Hendrycks and Collin Burns and Steven Basart and Andy Zou and "
        "Mantas Mazeika and Dawn Song and Jacob Steinhardt},\n"
        "  booktitle={International Conference on Learning Representations},\n"
        "  year={2021}\n}"
    )

    def to_items(
        self, raw: pa.Table, *, config: str | None, split: str, seed: int, origin: str
    ) -> pa.Table:
        require_columns(
            raw,
            ("question", "subject", "choices", "answer"),
            origin,
            {"question": "text", "subject": "text", "choices": "text_list", "answer": "int"},
        )
        n = raw.num_rows
        ids = [f"mmlu/{config}/{split}/{i:05d}" for i in range(n)]
        choices = raw.column("choices").combine_chunks()
        answers = raw.column("answer").combine_chunks()
        check_answers(ids, answers, choices, origin)
        check_present(ids, raw.column("subject"), "subject", origin)
        return item_table(
            {
                "id": ids,
                "source": [self.name] * n,
                "subject": raw.column("subject"),
                "question": raw.column("question"),
                "choices": choices,
                "answer": answers,
            },
            origin,
        )
