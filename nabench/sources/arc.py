"""ARC-Challenge (`allenai/ai2_arc`): keys are letters or digits; 3-5 options per row."""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa

from nabench.core.errors import SourceError
from nabench.sources._base import (
    Source,
    check_answers,
    item_table,
    native_ids,
    require_columns,
)


class ARCChallenge(Source):
    name = "arc_challenge"
    hub_id = "allenai/ai2_arc"
    default_config = "ARC-Challenge"
    splits = ("train", "validation", "test")
    license = "cc-by-sa-4.0"
    pretty_name = "ARC-Challenge"
    field_notes: ClassVar[dict[str, str]] = {
        "id": "`arc_challenge/<split>/<ARC id>`: the source row's own `id`.",
        "source": "Always `arc_challenge`.",
        "subject": "Always null: ARC has no subjects.",
        "question": "The question text.",
        "choices": "The options in source order (ARC's labels A-E / 1-4 are dropped); ARC has 3-5 "
        "per item, and a build keeps those its recipe takes (the others are in `excluded`).",
        "answer": "0-based index of the row's `answerKey` among its own labels.",
    }
    citation = (
        "@article{clark2018think,\n"
        "  title={Think you have Solved Question Answering? Try ARC, the AI2 Reasoning "
        "Challenge},\n"
        "  author={Peter Clark and Isaac Cowhey and Oren Etzioni and Tushar Khot and "
        "Ashish Sabharwal and Carissa Schoenick and Oyvind Tafjord},\n"
        "  journal={arXiv:1803.05457},\n  year={2018}\n}"
    )

    def to_items(
        self, raw: pa.Table, *, config: str | None, split: str, seed: int, origin: str
    ) -> pa.Table:
        require_columns(raw, ("id", "question", "choices", "answerKey"), origin)
        ids = [f"arc_challenge/{split}/{nid}" for nid in native_ids(raw, "id", origin)]
        structs = raw.column("choices").to_pylist()
        keys = raw.column("answerKey").to_pylist()
        choices: list[list[str]] = []
        answers: list[int] = []
        bad_keys: list[str] = []
        for item_id, struct, key in zip(ids, structs, keys, strict=True):
            if not struct or "text" not in struct or "label" not in struct:
                raise SourceError(f"{origin}: row {item_id}: choices lack text/label lists")
            # Labels and key are compared exactly, as stored: a key ' C' is no label 'C'
            # (stripping it would build from a source value other than the one given).
            labels = [str(lab) for lab in struct["label"]]
            # The key is found by label: repeated labels, or fewer labels than texts, would
            # key the wrong option (['A', 'A', 'B', 'C'] with key C picked the fourth text).
            if len(set(labels)) != len(labels) or len(labels) != len(struct["text"]):
                raise SourceError(
                    f"{origin}: row {item_id}: labels {labels} do not name its "
                    f"{len(struct['text'])} choices one each"
                )
            choices.append(list(struct["text"]))
            # The key is matched by position in the row's own label list (A-E or 1-5).
            if key is None or str(key) not in labels:
                bad_keys.append(f"row {item_id}: {_key_problem(key, labels)}")
                answers.append(-1)
            else:
                answers.append(labels.index(str(key)))
        if bad_keys:
            more = f" ({len(bad_keys)} such rows)" if len(bad_keys) > 1 else ""
            raise SourceError(f"{origin}: {bad_keys[0]}{more}")
        check_answers(ids, pa.array(answers, pa.int64()), pa.array(choices), origin)
        return item_table(
            {
                "id": ids,
                "source": [self.name] * len(ids),
                "subject": [None] * len(ids),
                "question": raw.column("question").to_pylist(),
                "choices": choices,
                "answer": answers,
            },
            origin,
        )


def _key_problem(key: object, labels: list[str]) -> str:
    """Why a row's answerKey keys none of its options (missing, or no label of the row)."""
    if key is None:
        return "answerKey is missing (null)"
    text = str(key)
    padded = " (keys are matched exactly: it has surrounding whitespace)"
    return f"answerKey {text!r} is not one of its labels {labels}" + (
        padded if text != text.strip() and text.strip() in labels else ""
    )
