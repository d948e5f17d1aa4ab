"""HellaSwag (`Rowan/hellaswag`): question = context, choices = endings, label is a string."""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa

from nabench.core.errors import SourceError
from nabench.sources._base import (
    Source,
    check_answers,
    check_present,
    item_table,
    native_ids,
    require_columns,
)


class HellaSwag(Source):
    name = "hellaswag"
    hub_id = "Rowan/hellaswag"
    default_config = None
    splits = ("train", "validation", "test")
    license = "mit"
    pretty_name = "HellaSwag"
    field_notes: ClassVar[dict[str, str]] = {
        "id": "`hellaswag/<split>/<ind>`: the source row's `ind`, 5 digits.",
        "source": "Always `hellaswag`.",
        "subject": "The row's `activity_label`.",
        "question": "The context (`ctx`) the endings continue.",
        "choices": "The 4 endings in source order.",
    }
    citation = (
        "@inproceedings{zellers2019hellaswag,\n"
        "  title={HellaSwag: Can a Machine Really Finish Your Sentence?},\n"
        "  author={Rowan Zellers and Ari Holtzman and Yonatan Bisk and Ali Farhadi and "
        "Yejin Choi},\n"
        "  booktitle={Proceedings of the 57th Annual Meeting of the Association for "
        "Computational Linguistics},\n  year={2019}\n}"
    )

    def check_split(self, split: str) -> None:
        if split == "test":
            raise SourceError(
                "hellaswag: the 'test' split has no labels (label is empty); "
                "use 'validation' or 'train'"
            )
        super().check_split(split)

    def to_items(
        self, raw: pa.Table, *, config: str | None, split: str, seed: int, origin: str
    ) -> pa.Table:
        require_columns(raw, ("ind", "activity_label", "ctx", "endings", "label"), origin)
        ids = [f"hellaswag/{split}/{int(i):05d}" for i in native_ids(raw, "ind", origin)]
        check_present(ids, raw.column("activity_label"), "activity_label", origin)
        labels = raw.column("label").to_pylist()
        if any(lab is None or str(lab).strip() == "" for lab in labels):
            raise SourceError(f"{origin}: split {split!r} has rows without a label")
        answers: list[int | None] = []
        for lab in labels:
            try:
                answers.append(int(str(lab).strip()))
            except ValueError:
                answers.append(None)
        choices = raw.column("endings").combine_chunks()
        check_answers(ids, pa.array(answers, pa.int64()), choices, origin)
        return item_table(
            {
                "id": ids,
                "source": [self.name] * len(ids),
                "subject": raw.column("activity_label").to_pylist(),
                "question": raw.column("ctx").to_pylist(),
                "choices": choices,
                "answer": answers,
            },
            origin,
        )
