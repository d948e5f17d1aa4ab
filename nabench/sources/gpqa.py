"""GPQA (`Idavidrein/gpqa`, gated): options are the correct + 3 incorrect answers, shuffled
per item with the recipe seed so every build orders them identically."""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa

from nabench.core.errors import SourceError
from nabench.core.rng import Draw, item_rng
from nabench.sources._base import (
    Source,
    check_present,
    item_table,
    native_ids,
    require_columns,
)

ANSWER_COLUMNS = (
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
)

SHUFFLE_DRAW = Draw(
    "gpqa_shuffle",
    "random",
    "with `item_id` = `gpqa/<Record ID>` (the row's `id` without its config, so a record "
    "shared by gpqa_diamond, gpqa_main and gpqa_extended gets one order): "
    "`order = [0, 1, 2, 3]; rng.shuffle(order)`, the options are "
    "`[texts[i] for i in order]` of `texts` = the stripped `Correct Answer`, "
    "`Incorrect Answer 1`, `2`, `3`, and the key is `order.index(0)`: the `original` options, "
    "which every variant starts from",
)


class GPQA(Source):
    name = "gpqa"
    hub_id = "Idavidrein/gpqa"
    default_config = "gpqa_main"
    # The Hub configs each load as a single split named `train`.
    splits = ("train",)
    license = "cc-by-4.0"
    pretty_name = "GPQA"
    field_notes: ClassVar[dict[str, str]] = {
        "id": "`gpqa/<config>/<Record ID>`: the source row's `Record ID`.",
        "source": "Always `gpqa`.",
        "subject": "The row's `Subdomain`.",
        "question": "The row's `Question`.",
        "choices": "The correct and 3 incorrect answers, shuffled per item (seeded).",
    }
    draws = (SHUFFLE_DRAW,)
    citation = (
        "@inproceedings{rein2024gpqa,\n"
        "  title={GPQA: A Graduate-Level Google-Proof Q\\&A Benchmark},\n"
        "  author={David Rein and Betty Li Hou and Asa Cooper Stickland and Jackson Petty and "
        "Richard Yuanzhe Pang and Julien Dirani and Julian Michael and Samuel R. Bowman},\n"
        "  booktitle={First Conference on Language Modeling},\n  year={2024}\n}"
    )

    def record_id(self, item_id: str) -> str:
        """The `Record ID` (`gpqa/<config>/<Record ID>`): diamond < main < extended share it."""
        return item_id.rsplit("/", 1)[-1]

    def to_items(
        self, raw: pa.Table, *, config: str | None, split: str, seed: int, origin: str
    ) -> pa.Table:
        require_columns(raw, ("Record ID", "Question", "Subdomain", *ANSWER_COLUMNS), origin)
        record_ids = native_ids(raw, "Record ID", origin)
        ids = [f"gpqa/{config}/{rid}" for rid in record_ids]
        check_present(ids, raw.column("Subdomain"), "Subdomain", origin)
        answer_cols = [raw.column(c).to_pylist() for c in ANSWER_COLUMNS]
        choices: list[list[str]] = []
        answers: list[int] = []
        for row, item_id in enumerate(ids):
            texts = []
            for col_name, col in zip(ANSWER_COLUMNS, answer_cols, strict=True):
                value = col[row]
                if value is None:
                    raise SourceError(f"{origin}: row {item_id}: {col_name!r} is empty")
                texts.append(str(value).strip())
            order = list(range(4))
            item_rng(seed, f"gpqa/{record_ids[row]}", SHUFFLE_DRAW.purpose).shuffle(order)
            choices.append([texts[i] for i in order])
            answers.append(order.index(0))
        return item_table(
            {
                "id": ids,
                "source": [self.name] * len(ids),
                "subject": raw.column("Subdomain").to_pylist(),
                "question": raw.column("Question").to_pylist(),
                "choices": choices,
                "answer": answers,
            },
            origin,
        )
