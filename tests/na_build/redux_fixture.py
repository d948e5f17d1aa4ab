"""An MMLU-Redux copy made at test time from the shared MMLU test split (never committed).

Redux's layout and columns (`question, choices, answer, error_type, source, correct_answer,
potential_reason`, one folder per subject): per subject, items of the first `LIMIT` MMLU test
rows, some `ok`, some of every error type, some whose question differs from MMLU's only in
whitespace and case, and rows that match no MMLU item. `expected` says, independently of
nabench's join, which MMLU row each Redux row is a copy of.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

LIMIT = 240  # --limit of the build: abstract_algebra (100 rows) and anatomy (135), + 5 more
SUBJECTS = ("abstract_algebra", "anatomy")
ERRORS = (
    "wrong_groundtruth",
    "no_correct_answer",
    "multiple_correct_answers",
    "bad_question_clarity",
    "bad_options_clarity",
    "expert",
)


@dataclass(frozen=True)
class Expected:
    """What the fixture holds: Redux rows copied from MMLU rows, by MMLU test row index."""

    error_types: dict[int, str]  # MMLU row -> error_type of its Redux row
    unmatched: int  # Redux rows that copy no MMLU item
    rows: int  # all Redux rows written


def _plain(text: str) -> str:
    return " ".join(text.split()).lower()


def _unique_rows(mmlu: pa.Table, subject: str) -> list[int]:
    """MMLU rows of `subject` within LIMIT whose question + choices no other row repeats."""
    rows = mmlu.slice(0, LIMIT).to_pylist()
    keys = [(r["subject"], _plain(r["question"]), tuple(map(_plain, r["choices"]))) for r in rows]
    return [i for i, r in enumerate(rows) if r["subject"] == subject and keys.count(keys[i]) == 1]


def _row(item: dict, error_type: str, question: str | None = None) -> dict:
    return {
        "question": item["question"] if question is None else question,
        "choices": list(item["choices"]),
        "answer": item["answer"],
        "error_type": error_type,
        "source": None if error_type == "ok" else "https://example.org/checked-answer",
        "correct_answer": "B" if error_type == "wrong_groundtruth" else None,
        "potential_reason": None if error_type == "ok" else f"fixture: {error_type}",
    }


def _subject_rows(mmlu: pa.Table, subject: str) -> tuple[list[dict], dict[int, str]]:
    picks = _unique_rows(mmlu, subject)
    items = mmlu.to_pylist()
    out: list[dict] = []
    types: dict[int, str] = {}
    plan = ["ok"] * 8 + [t for t in ERRORS for _ in range(2)]
    for row, error_type in zip(picks, plan, strict=False):
        out.append(_row(items[row], error_type))
        types[row] = error_type
    # Questions that differ from MMLU's only in whitespace and case: still the same item.
    for row, error_type in zip(picks[len(plan) :], ("ok", "wrong_groundtruth"), strict=False):
        shouted = "  " + "   ".join(items[row]["question"].upper().split()) + " \n"
        out.append(_row(items[row], error_type, question=shouted))
        types[row] = error_type
    # A question MMLU does not have, and an MMLU question with one choice changed.
    stranger = dict(items[picks[0]], question=f"Which {subject} item is not in MMLU at all?")
    out.append(_row(stranger, "wrong_groundtruth"))
    changed = dict(items[picks[1]], choices=[*items[picks[1]]["choices"][:3], "a changed choice"])
    out.append(_row(changed, "no_correct_answer"))
    return out, types


def make_redux(mmlu_dir: Path, root: Path, *, hub_layout: bool) -> Expected:
    """Write the fixture under `root`: with a Hub card (per-subject configs, parquet, read
    through `datasets` like a Hub id) or plain `<subject>/*.jsonl` + `*.parquet` folders."""
    mmlu = pq.read_table(mmlu_dir / "all" / "test-00000-of-00001.parquet")
    error_types: dict[int, str] = {}
    written = unmatched = 0
    configs = []
    for subject in SUBJECTS:
        rows, types = _subject_rows(mmlu, subject)
        error_types.update(types)
        written += len(rows)
        unmatched += 2
        folder = root / subject
        folder.mkdir(parents=True)
        if hub_layout:
            pq.write_table(pa.Table.from_pylist(rows), folder / "test-00000-of-00001.parquet")
            configs.append(
                f"- config_name: {subject}\n  data_files:\n  - split: test\n"
                f"    path: {subject}/test-*.parquet\n"
            )
        else:  # half JSON lines, half parquet: both are read
            half = len(rows) // 2
            lines = "".join(json.dumps(r) + "\n" for r in rows[:half])
            (folder / "part-0.jsonl").write_text(lines, encoding="utf-8")
            pq.write_table(pa.Table.from_pylist(rows[half:]), folder / "part-1.parquet")
    if hub_layout:
        (root / "README.md").write_text("---\nconfigs:\n" + "".join(configs) + "---\n")
    return Expected(error_types, unmatched, written)
