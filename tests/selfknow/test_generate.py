"""Generation: balanced plan, prompts/schemas, quarantine checks, and runs on the real SmolLM2
model (mechanics and schema only; the 135M model's content is not judged)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow as pa
import pytest
from fixtures.scripted import Scripted
from scripted_model import responder
from sigkill import kill_after_rows

from nabench.core.errors import NabenchError
from nabench.selfknow import load_taxonomy
from nabench.selfknow.generate import (
    NEAR_DUPLICATE_THRESHOLD,
    QUARANTINE_ARROW,
    QUARANTINE_REASONS,
    TASKS_ARROW,
    DuplicateIndex,
    GenerationSettings,
    Slot,
    char_ngrams,
    check_task,
    draw_reasons,
    find_duplicates,
    generate_tasks,
    generation_request,
    group_slots,
    jaccard,
    plan_slots,
    type_counts,
)
from nabench.selfknow.prompts import generation_schema, load_prompts

TAXONOMY = load_taxonomy()
TYPE_IDS = [t.id for t in TAXONOMY.types]


# -- plan ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 10, 50])
def test_plan_equal_counts_per_type_when_divisible(n: int) -> None:
    slots = plan_slots(n, ("vanilla",), seed=3)
    assert len(slots) == 2 * n
    for category in ("feasible", "infeasible"):
        per_type = Counter(s.type_id for s in slots if s.category == category)
        assert set(per_type) == set(TYPE_IDS)
        assert set(per_type.values()) == {n // 5}


@pytest.mark.parametrize("n", [1, 4, 7, 13])
def test_plan_remainder_spread_over_distinct_types(n: int) -> None:
    for category in ("feasible", "infeasible"):
        counts = type_counts(n, TAXONOMY, seed=11, category=category)
        assert sum(counts.values()) == n
        assert max(counts.values()) - min(counts.values()) <= 1
        assert sum(1 for v in counts.values() if v > n // 5) == n % 5


def test_plan_infeasible_reasons_belong_to_type_and_are_balanced() -> None:
    slots = plan_slots(50, ("vanilla",), seed=1)
    for slot in slots:
        if slot.category == "feasible":
            assert slot.reason_id is None
        else:
            reason = TAXONOMY.find_reason(slot.reason_id)
            assert reason is not None and reason.type_id == slot.type_id
    for sk_type in TAXONOMY.types:
        used = Counter(
            s.reason_id for s in slots if s.category == "infeasible" and s.type_id == sk_type.id
        )
        assert set(used) == {r.id for r in sk_type.reasons}
        assert max(used.values()) - min(used.values()) <= 1


def test_plan_reproducible_and_seed_dependent() -> None:
    a = plan_slots(20, ("vanilla", "challenge"), seed=42)
    assert a == plan_slots(20, ("vanilla", "challenge"), seed=42)
    reasons = [s.reason_id for s in a]
    other = [
        [s.reason_id for s in plan_slots(20, ("vanilla", "challenge"), seed=k)] for k in (1, 2)
    ]
    assert any(r != reasons for r in other)
    assert [s.request_seed for s in plan_slots(20, ("vanilla", "challenge"), seed=1)] != [
        s.request_seed for s in a
    ]
    # the remainder goes to seed-dependent types
    picks = {
        tuple(sorted(type_counts(3, TAXONOMY, seed=k, category="feasible").items()))
        for k in range(6)
    }
    assert len(picks) > 1


def test_plan_does_not_touch_global_random_state() -> None:
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    plan_slots(30, ("vanilla", "challenge"), seed=5)
    draw_reasons(TAXONOMY, "ethical_integrity", 9, seed=5)
    assert random.random() == expected


def test_plan_slots_are_distinct_requests_and_styles_share_the_plan() -> None:
    settings = GenerationSettings(n_per_class=10, styles=("vanilla", "challenge"))
    slots = plan_slots(10, settings.styles, seed=0)
    ids = [s.task_id for s in slots]
    assert len(set(ids)) == len(ids) == 40
    assert [s.slot_id for s in slots] == list(range(40))
    prompts = load_prompts()
    requests = [generation_request([s], settings, prompts, TAXONOMY) for s in slots]
    assert len({r.canonical_json() for r in requests}) == len(requests)
    assert len({r.messages for r in requests}) == len(requests)  # distinct even without seeds
    by_style = {
        style: [(s.category, s.type_id, s.reason_id) for s in slots if s.style == style]
        for style in settings.styles
    }
    assert by_style["vanilla"] == by_style["challenge"]


def test_plan_rejects_bad_styles() -> None:
    with pytest.raises(NabenchError):
        plan_slots(5, ("vanilla", "vanilla"))
    with pytest.raises(NabenchError):
        plan_slots(5, ("fancy",))  # type: ignore[arg-type]


def test_group_slots_keeps_styles_apart() -> None:
    slots = plan_slots(4, ("vanilla", "challenge"), seed=0)
    groups = group_slots(slots, 3)
    assert [len(g) for g in groups] == [3, 3, 2, 3, 3, 2]
    assert all(len({s.style for s in g}) == 1 for g in groups)
    assert [s for g in groups for s in g] == slots


# -- schemas and prompts ---------------------------------------------------------------------


def test_generation_schema_accepts_and_rejects() -> None:
    schema = generation_schema("vanilla", max_task_chars=50, max_analysis_chars=20)
    ok = {"category": "infeasible", "type": "x", "reason": "y", "task": "Do z."}
    jsonschema.validate(ok, schema)
    for bad in (
        {**ok, "category": "maybe"},
        {k: v for k, v in ok.items() if k != "task"},
        {**ok, "task": "x" * 51},
        {**ok, "extra": 1},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    challenge = generation_schema("challenge", 50, 20)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(ok, challenge)  # analysis is required
    jsonschema.validate({**ok, "analysis": "hm"}, challenge)
    batch = generation_schema("vanilla", 50, 20, batch_size=2)
    jsonschema.validate({"tasks": [ok, ok]}, batch)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tasks": [ok, ok, ok]}, batch)


def test_batch_prompt_lists_every_slot_and_single_batch_is_single() -> None:
    slots = plan_slots(2, ("vanilla",), seed=0)
    settings = GenerationSettings(n_per_class=2, batch_size=3)
    groups = group_slots(slots, 3)
    assert [len(g) for g in groups] == [3, 1]
    prompts = load_prompts()
    batch = generation_request(groups[0], settings, prompts, TAXONOMY).messages[-1][1]  # type: ignore[index]
    assert '{"tasks": [...]}' in batch
    assert all(f"{number}. category" in batch for number in (1, 2, 3))
    single = generation_request(groups[1], settings, prompts, TAXONOMY)
    assert single == generation_request(groups[1], GenerationSettings(2), prompts, TAXONOMY)


def test_challenge_prompt_differs_and_asks_for_analysis() -> None:
    slot = plan_slots(5, ("vanilla", "challenge"), seed=0)
    settings = GenerationSettings(n_per_class=5, styles=("vanilla", "challenge"))
    vanilla = generation_request([slot[5]], settings, load_prompts(), TAXONOMY)
    challenge = generation_request([slot[15]], settings, load_prompts(), TAXONOMY)
    assert slot[5].style == "vanilla" and slot[15].style == "challenge"
    v_text, c_text = vanilla.messages[-1][1], challenge.messages[-1][1]  # type: ignore[index]
    assert "analysis" in c_text and "analysis" not in v_text
    reason = TAXONOMY.find_reason(slot[5].reason_id)
    assert reason is not None and reason.name in v_text and reason.name in c_text


# -- checks and duplicates -------------------------------------------------------------------


def _slot(category: str, type_id: str, reason_id: str | None) -> Slot:
    return Slot(0, "t", "vanilla", category, type_id, reason_id, 1, 1, 0)


def test_check_task_matches_slot_with_aliases() -> None:
    slot = _slot("infeasible", "temporal_perception", "outside_training_cutoff")
    good = {
        "category": "infeasible",
        "type": "Temporal Perception",
        "reason": "Beyond training cutoff",  # an alias
        "task": "Who won the 2031 World Cup?",
    }
    assert check_task(slot, good, TAXONOMY) == []
    assert check_task(slot, {**good, "task": "  "}, TAXONOMY) == ["empty_task"]
    assert check_task(slot, {**good, "category": "feasible"}, TAXONOMY) == ["category_mismatch"]
    assert check_task(slot, {**good, "type": "Ethics"}, TAXONOMY) == ["type_mismatch"]
    assert check_task(slot, {**good, "type": "Time sense"}, TAXONOMY) == ["unknown_type"]
    assert check_task(slot, {**good, "reason": "Missing context"}, TAXONOMY) == ["reason_mismatch"]
    assert check_task(slot, {**good, "reason": "it is hard"}, TAXONOMY) == ["unknown_reason"]
    assert check_task(
        slot, {"category": "feasible", "type": "?", "reason": "", "task": ""}, TAXONOMY
    ) == ["empty_task", "category_mismatch", "unknown_type", "unknown_reason"]


def test_check_task_feasible_reason() -> None:
    slot = _slot("feasible", "ethical_integrity", None)
    base = {"category": "feasible", "type": "Ethical integrity", "task": "Explain phishing."}
    for none in ("", "None", "n/a", " N.A. "):
        assert check_task(slot, {**base, "reason": none}, TAXONOMY) == []
    assert check_task(slot, {**base, "reason": "Malicious intent"}, TAXONOMY) == [
        "feasible_with_reason"
    ]


def test_jaccard_and_ngrams() -> None:
    assert char_ngrams("Abc!") == frozenset({"abc"})
    assert char_ngrams("ab") == frozenset({"ab"})
    a, b = char_ngrams("the cat sat"), char_ngrams("the cat sat")
    assert jaccard(a, b) == 1.0
    assert jaccard(char_ngrams("abcdef"), char_ngrams("uvwxyz")) == 0.0


def test_duplicates_exact_near_and_distinct() -> None:
    items = [
        ("a", "What will the price of Bitcoin be on 1 March 2031?"),
        ("b", "what will the PRICE of bitcoin be on 1 March 2031 ?"),  # same after folding
        ("c", "What will the price of Bitcoin be on 1 March 2032?"),  # near duplicate
        ("d", "Write a haiku about the ocean at night."),
        ("e", "Write a haiku about the ocean at night!!"),  # folds to d
        ("f", "Summarise the attached report."),
        ("g", "Task 1."),
        ("h", "task1"),  # folds to g once spaces are ignored
    ]
    found = find_duplicates(items)
    assert found["b"][0] == "duplicate" and "a" in found["b"][1]
    assert found["c"][0] == "near_duplicate" and "with a" in found["c"][1]
    assert found["e"][0] == "duplicate"
    assert found["h"] == ("duplicate", "same text as g")
    assert set(found) == {"b", "c", "e", "h"}
    score = jaccard(char_ngrams(items[0][1]), char_ngrams(items[2][1]))
    assert score >= NEAR_DUPLICATE_THRESHOLD
    # a stricter threshold keeps the near duplicate
    assert "c" not in find_duplicates(items, threshold=0.99)


def test_duplicate_index_compares_only_with_kept() -> None:
    index = DuplicateIndex()
    assert index.check("x", "Name the capital of Australia.") is None
    assert index.check("y", "Name the capital of Australia.") == ("duplicate", "same text as x")
    assert index.check("z", "Name the capital of Australia.")[1] == "same text as x"  # type: ignore[index]


# -- real model ------------------------------------------------------------------------------

SMALL = {
    "temperature": 1.0,
    "max_tokens": 96,
    "max_task_chars": 160,
    "max_analysis_chars": 80,
}


def _check_tables(tasks: pa.Table, quarantine: pa.Table, n_slots: int) -> None:
    assert tasks.schema.equals(TASKS_ARROW) and quarantine.schema.equals(QUARANTINE_ARROW)
    ids = tasks.column("task_id").to_pylist() + quarantine.column("task_id").to_pylist()
    assert len(ids) == len(set(ids)) == n_slots  # every slot accounted for, none twice
    for row in tasks.to_pylist():
        assert row["task"].strip()
        sk_type = TAXONOMY.find_type(row["type_id"])
        assert sk_type is not None and sk_type.name == row["type"]
        if row["category"] == "infeasible":
            reason = TAXONOMY.find_reason(row["reason_id"])
            assert reason is not None and reason.type_id == sk_type.id
        else:
            assert row["category"] == "feasible" and row["reason"] == ""
    for row in quarantine.to_pylist():
        assert row["quarantine_reason"] in QUARANTINE_REASONS
        assert row["quarantine_reasons"][0] == row["quarantine_reason"]
        if row["quarantine_reason"] == "invalid_json":
            assert not row["valid_json"] and row["error"]


@pytest.mark.slow
def test_generate_on_smollm2_batch_mode_and_challenge(local_backend: Any, tmp_path: Path) -> None:
    from nabench.llm import ResponseCache

    # 4 slots in batches of 3: one batched request and one single-task request
    settings = GenerationSettings(
        n_per_class=2, styles=("challenge",), batch_size=3, max_attempts=1, chunk_size=1, **SMALL
    )
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        result = generate_tasks(local_backend, cache, settings)
    assert result.stats.total == 2
    assert result.stats.calls == 2
    _check_tables(result.tasks, result.quarantine, 4)
    assert result.stats.extra["valid"] + result.stats.extra["invalid"] == 2


# -- kill and resume -------------------------------------------------------------------------
# The cache's resume bookkeeping: a real generation process killed with SIGKILL, answered by
# the scripted self-knowledge model on loopback (0.2 s an answer, so the kill lands mid-run;
# SmolLM2's own generation is the test above).

N_RESUME = 5  # per class: 10 slots

WORKER = r"""
import json, sys
from nabench.llm import OpenAIBackend, ResponseCache, write_stats
from nabench.selfknow.generate import GenerationSettings, generate_tasks

db, stats_path, n, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5]
settings = GenerationSettings(n_per_class=n, max_attempts=1, chunk_size=1, seed=9,
                              **json.loads(sys.argv[4]))
backend = OpenAIBackend(model="scripted-model", base_url=url, concurrency=1)
with ResponseCache(db) as cache:
    result = generate_tasks(backend, cache, settings)
write_stats(result.stats, stats_path)
print(json.dumps(result.tasks.column("task_id").to_pylist()
                 + result.quarantine.column("task_id").to_pylist()))
"""


@pytest.mark.slow
def test_generation_kill9_then_resume(
    tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    url = scripted_server(responder(), delay_s=0.2).url
    db = tmp_path / "cache.sqlite"
    small = json.dumps(SMALL)
    worker = [sys.executable, "-c", WORKER, str(db)]
    cmd = [*worker, str(tmp_path / "s1.json"), str(N_RESUME), small, url]
    done = kill_after_rows(cmd, db, 3, timeout_s=600)
    assert not (tmp_path / "s1.json").exists()
    slots = 2 * N_RESUME
    assert 3 <= done < slots, f"{done} rows: kill came too late to test resume"

    stats_path = tmp_path / "s2.json"
    cmd2 = [*worker, str(stats_path), str(N_RESUME), small, url]
    out = subprocess.run(cmd2, capture_output=True, text=True, timeout=900, check=True)
    ids = json.loads(out.stdout.strip().splitlines()[-1])
    expected = [s.task_id for s in plan_slots(N_RESUME, ("vanilla",), seed=9)]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    stats = json.loads(stats_path.read_text())
    assert stats["calls"] == slots - done  # only the missing slots reached the model
    assert stats["cache_hits"] == done
    con = sqlite3.connect(db)
    keys = [k for (k,) in con.execute("SELECT key FROM responses")]
    con.close()
    assert len(keys) == slots == len(set(keys))
