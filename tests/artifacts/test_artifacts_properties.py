"""Hypothesis properties of the prompt layouts on invented items (kept small and cheap: the
CI profile runs 1,000 examples each)."""

from __future__ import annotations

import string
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP, COSTLY

from nabench.core.rng import item_rng
from nabench.perturb.artifacts import (
    PROMPT_TYPES,
    build_prompt_tables,
    extract_inferred_question,
    replace_test_question,
    seeded_derangement,
)
from nabench.sources._base import item_table
from nabench.validate.artifacts import check_artifacts

L = "ABCD"
# Questions use Greek letters, options and layout Latin ones: no question text can hide in an
# option or in the layout's labels.
QUESTION = st.text("αβγδεζηθ ?", min_size=1, max_size=30).filter(lambda q: bool(q.strip(" ?")))
OPTION = st.text(string.ascii_lowercase + string.digits + " .,", min_size=1, max_size=12).filter(
    str.strip
)
PAD = st.sampled_from(["", " ", "\n", "  \n"])


@st.composite
def items(draw: st.DrawFn, prefix: str, min_size: int, max_size: int) -> pa.Table:
    n = draw(st.integers(min_size, max_size))
    rows: dict[str, list[Any]] = {
        k: [] for k in ("id", "source", "subject", "question", "choices", "answer")
    }
    for i in range(n):
        options = draw(st.lists(OPTION, min_size=4, max_size=4, unique_by=str.strip))
        rows["id"].append(f"toy/{prefix}/{i}")
        rows["source"].append("toy")
        rows["subject"].append(draw(st.sampled_from(["s1", "s2", None])))
        rows["question"].append(draw(PAD) + draw(QUESTION) + draw(PAD))
        rows["choices"].append([o + draw(PAD) for o in options])
        rows["answer"].append(draw(st.integers(0, 3)))
    return item_table(rows)


@st.composite
def builds(draw: st.DrawFn) -> tuple[pa.Table, pa.Table, int, dict[str, pa.Table]]:
    test = draw(items("test", 1, 4))
    pool = draw(items("dev", 3, 6))
    k = draw(st.integers(0, 3))
    seed = draw(st.integers(0, 2**31))
    types = draw(st.lists(st.sampled_from(list(PROMPT_TYPES)), min_size=1, max_size=3, unique=True))
    tables = build_prompt_tables(
        test, pool, prompt_types=types, protocol="random", k=k, seed=seed, dataset="toy"
    )
    return test, pool, k, tables


@COSTLY
@given(builds())
def test_every_build_passes_the_validator(
    data: tuple[pa.Table, pa.Table, int, dict[str, pa.Table]],
) -> None:
    _, pool, k, tables = data
    questions = dict(
        zip(pool.column("id").to_pylist(), pool.column("question").to_pylist(), strict=True)
    )
    for name, table in tables.items():
        assert check_artifacts(table, name, k=k, questions=questions, schema=False) == []


@COSTLY
@given(builds())
def test_layout_invariants(data: tuple[pa.Table, pa.Table, int, dict[str, pa.Table]]) -> None:
    test, pool, k, tables = data
    pool_rows = {r["id"]: r for r in pool.to_pylist()}
    all_questions = [
        q.strip()
        for q in [*test.column("question").to_pylist(), *pool.column("question").to_pylist()]
    ]
    for name, table in tables.items():
        rows = table.to_pylist()
        per_item = 4 if name.startswith("prior") else 1
        assert len(rows) == per_item * test.num_rows
        for row in rows:
            prompt = row["prompt"]
            blocks = prompt.split("\n\n")  # the invented texts hold no blank line
            assert len(blocks) == k + 1 == len(row["fewshot_ids"]) + 1
            assert prompt.endswith("Question:" if name == "qi_step1" else "Answer:")
            assert not prompt.endswith(" ")
            for block, shot in zip(blocks, row["fewshot_ids"], strict=False):
                item = pool_rows[shot.split("#")[0]]
                if name.startswith("prior"):
                    choice = int(shot.split("#")[1])
                    assert block.endswith(f"Answer: {choice == item['answer']}")
                else:
                    assert block.endswith(f"Answer: ({L[item['answer']]})")
            if name in ("choices_only", "prior_choice"):
                assert "Question" not in prompt
                assert not any(q in prompt for q in all_questions)
            if name == "mem_gold_choices":
                for block in blocks:
                    lines = [ln for ln in block.split("\n") if ln[:1] == "(" and ln[2:4] == ") "]
                    assert len(lines) == 4 and len({ln[4:] for ln in lines}) == 1
            if name == "mem_empty_choices":
                for block in blocks:
                    assert "\n(A) \n(B) \n(C) \n(D) \nAnswer:" in block
            if name == "mem_no_choices":
                assert "(A)" not in blocks[-1]
        if name.startswith("prior"):
            for start in range(0, len(rows), 4):
                group = rows[start : start + 4]
                assert [r["target"] for r in group].count("True") == 1
                assert [r["choice_index"] for r in group] == [0, 1, 2, 3]
            shots = rows[0]["fewshot_ids"]
            golds = [int(f.split("#")[1]) == pool_rows[f.split("#")[0]]["answer"] for f in shots]
            assert sum(golds) == k // 2


@COSTLY
@given(builds(), st.integers(0, 3), st.sampled_from(["reveal", "stop", "drop_shot", "target"]))
def test_tampering_is_always_reported(
    data: tuple[pa.Table, pa.Table, int, dict[str, pa.Table]], pick: int, how: str
) -> None:
    _, _, k, tables = data
    name, table = next(iter(tables.items()))
    row = pick % table.num_rows
    columns = {c: table.column(c).to_pylist() for c in table.column_names}
    if how == "reveal":
        columns["prompt"][row] += " (A)"
    elif how == "stop":
        columns["stop"][row] = "\nAnswer:"
    elif how == "drop_shot":
        columns["fewshot_ids"][row] = columns["fewshot_ids"][row][1:] if k else ["toy/dev/0"]
    else:
        columns["target"][row] = {"True": "False", "False": "True", None: "A"}.get(
            columns["target"][row], "E"
        )
    tampered = pa.Table.from_pydict(columns, schema=table.schema)
    violations = check_artifacts(tampered, name, schema=False)
    assert any(v.row == row for v in violations)


@CHEAP
@given(st.integers(2, 60), st.integers(0, 2**31))
def test_derangement_has_no_fixed_point(n: int, seed: int) -> None:
    perm = seeded_derangement(n, item_rng(seed, "toy/test", "qi_random_question"))
    assert sorted(perm) == list(range(n))
    assert all(i != j for i, j in enumerate(perm))
    assert perm == seeded_derangement(n, item_rng(seed, "toy/test", "qi_random_question"))


@CHEAP
@given(st.text(max_size=40), st.text(max_size=40))
def test_inferred_question_is_the_text_before_answer(head: str, tail: str) -> None:
    assert extract_inferred_question(head.replace("Answer:", "")) is None
    got = extract_inferred_question(head.replace("Answer:", "") + "Answer:" + tail)
    stripped = head.replace("Answer:", "").strip()
    assert got == (stripped or None)


@COSTLY
@given(builds(), st.lists(QUESTION, min_size=4, max_size=4))
def test_step2_changes_only_the_test_question(
    data: tuple[pa.Table, pa.Table, int, dict[str, pa.Table]], new_questions: list[str]
) -> None:
    test, pool, k, _ = data
    full = build_prompt_tables(
        test, pool, prompt_types=["full"], protocol="random", k=k, seed=1, dataset="toy"
    )["full"]
    n = full.num_rows
    chosen: list[str | None] = [q if i % 2 == 0 else None for i, q in enumerate(new_questions[:n])]
    step2 = replace_test_question(full, chosen, full.column("id").to_pylist(), "qi_step2")
    assert step2.num_rows == sum(q is not None for q in chosen)
    before = dict(
        zip(full.column("id").to_pylist(), full.column("prompt").to_pylist(), strict=True)
    )
    for row in step2.to_pylist():
        old = before[row["id"]]
        old_prefix = old.rsplit("\n\n", 1)[0] if k else ""
        new_prefix = row["prompt"].rsplit("\n\n", 1)[0] if k else ""
        assert new_prefix == old_prefix
        assert (
            row["prompt"]
            .rsplit("\n\n", 1)[-1]
            .startswith(f"Question: {row['inserted_question']}\nChoices:\n")
        )
    assert check_artifacts(step2, "s2", k=k, schema=False) == []
