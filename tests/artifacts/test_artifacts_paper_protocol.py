"""The `artifacts-paper` protocol: every prompt of the full MMLU test split laid out as the
"Artifacts or Abduction" authors do, on the raw source text; step 2 keeps every item; the
random-question control stays within a subject.

The authors' layout is written here from its documented format (README: option lines
``(A) text``, examples separated by a blank line, a prompt ends with ``Answer:``; the issue:
question and option text exactly as the source has them), reading the source parquet files
directly, not through nabench's loaders or builders.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from nabench.core.errors import NabenchError
from nabench.evaluation.items import build_items
from nabench.evaluation.outputs import score_outputs
from nabench.evaluation.producers import ModelProducer, StrategyProducer
from nabench.evaluation.strategies import get_strategy
from nabench.llm import Backend, ChatRequest, Completion, ResponseCache
from nabench.perturb.artifacts.question_inference import (
    grouped_derangement,
    replace_test_question,
)
from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.question_inference import build_preset, infer_questions
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.manifest import Manifest
from nabench.schemas.protocol import get_protocol, protocols
from nabench.validate import validate_path
from nabench.validate.artifacts import check_artifacts

L = "ABCDEFGHIJ"
Row = dict[str, Any]


def _opts(choices: Sequence[str]) -> str:
    return "".join(f"({L[i]}) {c}\n" for i, c in enumerate(choices))


def _tf(ci: int, answer: int) -> str:
    return "True" if ci == answer else "False"


# prompt type -> (few-shot example, test example); each takes (row, choice index or -1).
Render = Callable[[Row, int], str]
AUTHORS: dict[str, tuple[Render, Render]] = {
    "full": (
        lambda r, c: (
            f"Question: {r['question']}\nChoices:\n{_opts(r['choices'])}Answer: ({L[r['answer']]})"
        ),
        lambda r, c: f"Question: {r['question']}\nChoices:\n{_opts(r['choices'])}Answer:",
    ),
    "choices_only": (
        lambda r, c: f"Choices:\n{_opts(r['choices'])}Answer: ({L[r['answer']]})",
        lambda r, c: f"Choices:\n{_opts(r['choices'])}Answer:",
    ),
    "mem_no_choices": (
        lambda r, c: f"Question: {r['question']}\nAnswer: ({L[r['answer']]})",
        lambda r, c: f"Question: {r['question']}\nAnswer:",
    ),
    "mem_gold_choices": (
        lambda r, c: (
            f"Question: {r['question']}\nChoices:\n"
            f"{_opts([r['choices'][r['answer']]] * len(r['choices']))}Answer: ({L[r['answer']]})"
        ),
        lambda r, c: (
            f"Question: {r['question']}\nChoices:\n"
            f"{_opts([r['choices'][r['answer']]] * len(r['choices']))}Answer:"
        ),
    ),
    "mem_empty_choices": (
        lambda r, c: (
            f"Question: {r['question']}\nChoices:\n"
            f"{_opts([''] * len(r['choices']))}Answer: ({L[r['answer']]})"
        ),
        lambda r, c: (
            f"Question: {r['question']}\nChoices:\n{_opts([''] * len(r['choices']))}Answer:"
        ),
    ),
    "prior_choice": (
        lambda r, c: f"Choice: {r['choices'][c]}\nAnswer: {_tf(c, r['answer'])}",
        lambda r, c: f"Choice: {r['choices'][c]}\nAnswer:",
    ),
    "prior_choice_with_question": (
        lambda r, c: (
            f"Question: {r['question']}\nChoice: {r['choices'][c]}\nAnswer: {_tf(c, r['answer'])}"
        ),
        lambda r, c: f"Question: {r['question']}\nChoice: {r['choices'][c]}\nAnswer:",
    ),
    "qi_step1": (
        lambda r, c: (
            f"Choices:\n{_opts(r['choices'])}Question: {r['question']}\nAnswer: ({L[r['answer']]})"
        ),
        lambda r, c: f"Choices:\n{_opts(r['choices'])}Question:",
    ),
}


def _raw(mmlu_dir: Path, split: str) -> dict[str, Row]:
    rows = pq.read_table(mmlu_dir / "all" / f"{split}-00000-of-00001.parquet").to_pylist()
    return {f"mmlu/all/{split}/{i:05d}": r for i, r in enumerate(rows)}


def _ref(key: str) -> tuple[str, int]:
    item, _, choice = key.partition("#")
    return item, int(choice) if choice else -1


def authors_prompt(ptype: str, row: Row, test: dict[str, Row], dev: dict[str, Row]) -> str:
    example, test_example = AUTHORS[ptype]
    shots = [example(dev[i], c) for i, c in map(_ref, row["fewshot_ids"])]
    item, choice = _ref(row["id"])
    return "".join(s + "\n\n" for s in shots) + test_example(test[item], choice)


@pytest.fixture(scope="module")
def paper_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    out = tmp_path_factory.mktemp("paper") / "mmlu-artifacts"
    return build_artifacts(
        load_recipe("mmlu-artifacts"),
        BuildOptions(source=str(mmlu_dir), out=out, protocol="artifacts-paper", progress=False),
    )


def test_every_prompt_of_full_mmlu_equals_the_authors_layout(
    paper_build: BuildResult, mmlu_dir: Path
) -> None:
    test, dev = _raw(mmlu_dir, "test"), _raw(mmlu_dir, "dev")
    checked: Counter[str] = Counter()
    for ptype in AUTHORS:
        table = pq.read_table(paper_build.out / ptype / "test-00000-of-00001.parquet")
        rows = table.select(["id", "prompt", "fewshot_ids"]).to_pylist()
        bad = [r["id"] for r in rows if r["prompt"] != authors_prompt(ptype, r, test, dev)]
        assert bad == [], f"{ptype}: {len(bad)} prompts differ, e.g. {bad[:3]}"
        checked[ptype] = len(rows)
    # Every test item but the 9 with duplicate options, in every prompt type.
    assert checked["full"] == len(test) - 9 == 14033
    assert checked["prior_choice"] == 4 * checked["full"]
    assert sum(checked.values()) == 14 * 14033  # 6 one-row types, 2 one-row-per-option
    manifest = json.loads((paper_build.out / "build.json").read_text())
    assert manifest["text"] == "raw" and manifest["protocol"]["name"] == "artifacts-paper"
    assert validate_path(paper_build.out).violations == []


def test_raw_text_matters_on_mmlu(paper_build: BuildResult, mmlu_dir: Path) -> None:
    """The protocol is not a no-op: thousands of `full` prompts differ once text is
    stripped (the layout nabench uses by default)."""
    test, dev = _raw(mmlu_dir, "test"), _raw(mmlu_dir, "dev")

    def stripped(rows: dict[str, Row]) -> dict[str, Row]:
        out = {}
        for k, r in rows.items():
            choices = [c.strip() for c in r["choices"]]
            out[k] = {**r, "question": r["question"].strip(), "choices": choices}
        return out

    s_test, s_dev = stripped(test), stripped(dev)
    rows = pq.read_table(paper_build.out / "full" / "test-00000-of-00001.parquet").to_pylist()
    differ = sum(
        authors_prompt("full", r, test, dev) != authors_prompt("full", r, s_test, s_dev)
        for r in rows
    )
    assert differ > 1000


def test_step2_keeps_one_row_per_step1_row(paper_build: BuildResult) -> None:
    full = pq.read_table(paper_build.out / "full" / "test-00000-of-00001.parquet").slice(0, 30)
    ids = full.column("id").to_pylist()
    inferred = [None if i % 3 == 0 else f"What is asked in item {i}?" for i in range(30)]
    step2 = replace_test_question(full, inferred, ids, "qi_step2", text="raw", keep_missing=True)
    assert step2.column("id").to_pylist() == ids  # one row per step-1 row, same order
    kept = step2.to_pylist()
    for i, row in enumerate(kept):
        if inferred[i] is None:
            assert row["inserted_question"] is None and row["inserted_from"] is None
            assert row["prompt"].rsplit("\n\n", 1)[-1].startswith("Question: \nChoices:\n")
        else:
            assert row["inserted_question"] == inferred[i]
    assert check_artifacts(step2, "qi_step2", text="raw") == []
    dropped = replace_test_question(full, inferred, ids, "qi_step2", text="raw")
    assert dropped.num_rows == 20  # nabench's own protocol leaves them out


class _Recorder(Backend):
    """A nabench backend that answers "(A)" and keeps every prompt it was sent."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.model_id = "recorder"
        self.prompts: list[str] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.prompts += [str(r.prompt) for r in requests]
        self.bounds = {(r.min_tokens, r.max_tokens) for r in requests}
        return [Completion(text="(A)", finish_reason="stop") for _ in requests]


def test_step1_decodes_5_to_200_new_tokens_as_the_authors(
    paper_build: BuildResult, tmp_path: Path
) -> None:
    """Step 1 decoded at most 96 tokens with no minimum, whatever the build's protocol."""
    backend = _Recorder()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        infer_questions(paper_build.out, backend, cache, out=tmp_path / "qi", limit=2,
                        progress=False)  # fmt: skip
    assert backend.bounds == {(5, 200)}
    manifest = json.loads((tmp_path / "qi" / "build.json").read_text())
    qi = manifest["question_inference"]
    assert (qi["min_tokens"], qi["max_tokens"]) == (5, 200)
    # a build recorded before the bounds existed decodes as its preset states them today
    old = {"name": "artifacts-paper", "artifacts": {"text": "raw", "qi_keep_missing": True}}
    preset = build_preset(Manifest.model_validate({"protocol": old}))
    assert (preset.qi_step1_min_tokens, preset.qi_step1_max_tokens) == (5, 200)
    assert build_preset(Manifest()).qi_step1_max_tokens == 96  # nabench's own


def test_step2_items_without_a_question_are_never_sent_and_score_the_credit(
    paper_build: BuildResult, tmp_path: Path
) -> None:
    """Kept without an inferred question (artifacts-paper), a step-2 item used to be sent
    with an empty question and scored like any answer; the authors give it 0.25."""
    full = pq.read_table(paper_build.out / "full" / "test-00000-of-00001.parquet").slice(0, 12)
    ids = full.column("id").to_pylist()
    inferred = [None if i % 3 == 0 else f"What is asked in item {i}?" for i in range(12)]
    step2 = replace_test_question(full, inferred, ids, "qi_step2", text="raw", keep_missing=True)
    items = build_items("qi_step2", step2.to_pandas())
    missing = [q is None for q in inferred]
    assert items.not_asked is not None and items.not_asked.tolist() == missing
    backend = _Recorder()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        produced = ModelProducer(backend, cache, progress=False).produce(items)
    assert len(backend.prompts) == 8 and produced.calls == 8  # 4 of 12 not asked
    assert all("Question: \nChoices:" not in p for p in backend.prompts)
    paper = get_protocol("artifacts-paper")
    assert paper.scoring is not None
    rows = score_outputs(items, produced, "recorder", paper.scoring.invalid_score, paper.scoring)
    gone = rows[np.array(missing)]
    assert gone["invalid"].all() and not gone["correct"].any() and gone["not_asked"].all()
    assert (gone["score"] == 0.25).all()
    oracle = StrategyProducer(get_strategy("oracle"), answer_format="({})")
    scored = score_outputs(items, oracle.produce(items), "oracle", 0.25, paper.scoring)
    assert scored["score"].tolist() == [0.25 if m else 1.0 for m in missing]


def test_random_question_control_stays_within_each_subject(paper_build: BuildResult) -> None:
    table = pq.read_table(paper_build.out / "full" / "test-00000-of-00001.parquet")
    subjects = table.column("subject").to_pylist()
    perm = grouped_derangement(subjects, random.Random("20240601:test"))
    assert sorted(perm) == list(range(len(subjects)))
    assert all(i != j for i, j in enumerate(perm))
    assert all(subjects[i] == subjects[j] for i, j in enumerate(perm))
    # A lone item of its subject is deranged with the other lone ones.
    lone = grouped_derangement(["a", "b", "c", "c"], random.Random(1))
    assert lone[2] == 3 and lone[3] == 2 and {lone[0], lone[1]} == {0, 1}
    assert all(i != j for i, j in enumerate(lone))


def test_protocol_registry_names_each_paper() -> None:
    names = {"nabench", "na-paper", "artifacts-paper", "line-of-duty", "line-of-duty-code"}
    assert names <= set(protocols())
    for name in names - {"nabench"}:  # a paper preset says where each of its settings is from
        preset = protocols()[name]
        stated = {f"{sec}.{k}" for sec in ("decoding", "scoring", "artifacts", "selfknow",
                  "report") if (spec := getattr(preset, sec)) is not None
                  for k in spec.model_fields_set}  # fmt: skip
        assert stated <= set(preset.sources), (name, stated - set(preset.sources))
    paper = get_protocol("artifacts-paper")
    assert paper.decoding is not None and paper.scoring is not None
    assert (paper.decoding.min_tokens, paper.decoding.max_tokens) == (5, 200)
    assert paper.artifacts is not None  # question-inference step 1 decodes 5-200 tokens too
    assert (paper.artifacts.qi_step1_min_tokens, paper.artifacts.qi_step1_max_tokens) == (5, 200)
    assert paper.scoring.invalid_score == 0.25 and paper.scoring.answer_rule == "authors_prefix"
    na = get_protocol("na-paper")
    assert na.decoding is not None
    assert (na.decoding.temperature, na.decoding.top_p, na.decoding.max_tokens) == (0, 1, 1024)
    assert na.decoding.prompt == "zero_shot_cot"


def test_a_protocol_not_for_builds_is_refused(mmlu_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(NabenchError, match="'na-paper' applies to eval, report, not builds"):
        build_artifacts(
            load_recipe("mmlu-artifacts"),
            BuildOptions(source=str(mmlu_dir), out=tmp_path / "o", protocol="na-paper", limit=5),
        )
