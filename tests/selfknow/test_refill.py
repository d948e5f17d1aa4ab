"""The `line-of-duty-code` protocol (the authors' code) on the real SmolLM2 model:
temperature 1.0 for generation and classification, and quarantined slots refilled (seeded,
cached rounds) until every class x type cell meets its quota, or the shortfall is named per
cell."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fixtures.scripted import Scripted
from scripted_model import openai_model, responder

from nabench.pipelines.registry import parse_recipe, run_recipe
from nabench.pipelines.selfknow import default_stats_path
from nabench.pipelines.skeleton import BuildOptions
from nabench.selfknow import load_taxonomy
from nabench.selfknow.generate import plan_slots, refill_seed, refill_slots

RECIPE: dict[str, Any] = {
    "kind": "selfknow",
    "name": "sk-refill",
    "version": "0.1.0",
    "seed": 11,
    "generator": {
        "options": {"n_threads": 1},
        "styles": ["vanilla"],
        "n_per_class": 5,
        "temperature": 0.0,  # the protocol overrides it
        "max_tokens": 96,
        "max_task_chars": 160,
        "max_analysis_chars": 80,
        "max_attempts": 1,
        "chunk_size": 8,
    },
    "classifier": {"max_tokens": 64, "max_answer_chars": 100, "max_attempts": 1},
}


def _table(out: Path, config: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(
        out / config / "test-00000-of-00001.parquet"
    ).to_pylist()
    return rows


def test_refill_slots_get_new_distinct_seeds() -> None:
    plan = plan_slots(5, ("vanilla",), seed=11)
    first = refill_slots(plan, 11, 1)
    second = refill_slots(plan, 11, 2)
    seeds = {s.request_seed for s in plan} | {s.request_seed for s in first + second}
    assert len(seeds) == 3 * len(plan)  # every round is a new request per slot
    assert [s.task_id for s in first] == [s.task_id for s in plan]
    assert first[0].request_seed == refill_seed(11, plan[0].task_id, 1)  # reproducible


def test_line_of_duty_follows_the_paper_and_its_code_variant_the_code() -> None:
    """The paper classifies at temperature 0 and draws 400 tasks per class; the authors'
    code calls every model at 1.0 and takes the count as an argument (the recipe's)."""
    from nabench.pipelines.selfknow import apply_protocol
    from nabench.schemas.protocol import get_protocol

    recipe = parse_recipe(RECIPE, "refill")
    paper = apply_protocol(recipe, get_protocol("line-of-duty"))
    assert (paper.generator.temperature, paper.classifier.temperature) == (1.0, 0.0)
    assert paper.generator.n_per_class == 400
    code = apply_protocol(recipe, get_protocol("line-of-duty-code"))
    assert (code.generator.temperature, code.classifier.temperature) == (1.0, 1.0)
    assert code.generator.n_per_class == 5
    sources = get_protocol("line-of-duty").sources
    assert sources["selfknow.classification_temperature"] == "paper text"
    assert sources["selfknow.n_per_class"] == "paper text"
    assert get_protocol("line-of-duty-code").sources["selfknow.classification_temperature"] == (
        "authors' code"
    )


def test_line_of_duty_meets_every_quota_or_names_the_shortfall(
    tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    """Refill bookkeeping with chosen answers (a scripted server, the real openai backend):
    every feasible slot is answered with another type the first time its prompt is seen and
    rightly on the refill; one infeasible type is never answered with JSON. So every
    cell but that one meets its quota after one refill, that one is short by all its slots
    after the protocol's 5 rounds, and the card and stats name exactly that shortfall."""
    taxonomy = load_taxonomy()
    plan = plan_slots(5, ("vanilla",), seed=11)
    broken = next(s.type_id for s in plan if s.category == "infeasible")
    broken_name = taxonomy.find_type(broken).name  # type: ignore[union-attr]

    def rule(category: str, type_name: str, _reason: str, seen: int) -> str | None:
        if category == "infeasible" and type_name == broken_name:
            return None  # no JSON, every round
        if category == "feasible" and seen == 1:  # another type the first time
            return next(t.name for t in taxonomy.types if t.name != type_name)
        return type_name

    server = scripted_server(responder(rule))
    out = tmp_path / "sk"
    recipe = parse_recipe(openai_model(RECIPE, server.url), "refill")
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    tasks, quarantine = _table(out, "tasks"), _table(out, "quarantine")
    manifest = json.loads((out / "build.json").read_text())
    gen = manifest["generation"]
    assert manifest["protocol"]["name"] == "line-of-duty-code"
    assert {r["temperature"] for r in tasks + quarantine} == {1.0}
    assert {r["temperature"] for r in _table(out, "classifications")} == {1.0}

    cell = f"vanilla/infeasible/{broken}"
    quota = Counter(f"vanilla/{s.category}/{s.type_id}" for s in plan)
    kept = Counter(f"vanilla/{r['category']}/{r['type_id']}" for r in tasks)
    assert gen["shortfall"] == {cell: quota[cell]}
    assert kept == {c: n for c, n in quota.items() if c != cell}  # never overfilled
    assert len({r["task_id"] for r in tasks}) == len(tasks) == len(plan) - quota[cell]
    card = (out / "README.md").read_text()
    assert f"`{cell}`: {quota[cell]}" in card
    stats = json.loads(default_stats_path(out).read_text())["extra"]["generation"]
    assert stats["extra"]["shortfall"] == {cell: quota[cell]}

    # Each failed attempt stays quarantined with its round; refilled slots were re-asked.
    assert gen["refill_rounds"] == 5
    by_reason = Counter((r["quarantine_reason"], r["refill_round"]) for r in quarantine)
    feasible = sum(1 for s in plan if s.category == "feasible")
    assert by_reason == {
        ("type_mismatch", 0): feasible,  # refilled once, then kept
        **{("invalid_json", r): quota[cell] for r in range(6)},  # every round fails
    }
    assert Counter(r["refill_round"] for r in tasks) == {0: len(tasks) - feasible, 1: feasible}

    # A rerun replays every round from the cache.
    posts = len(server.posts)
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    assert json.loads(default_stats_path(out).read_text())["calls"] == 0
    assert len(server.posts) == posts
    assert _table(out, "tasks") == tasks


@pytest.mark.slow
def test_line_of_duty_on_the_real_model_ends_with_a_named_shortfall_or_none(
    tmp_path: Path, llama_cpp: Any
) -> None:
    """The same protocol end to end on SmolLM2 (whatever it writes): the shortfall it names
    is what the kept tasks leave missing, and a rerun calls no model."""
    out = tmp_path / "sk"
    recipe = parse_recipe({**RECIPE, "generator": {**RECIPE["generator"], "n_per_class": 2}},
                          "refill")  # fmt: skip
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    tasks = _table(out, "tasks")
    gen = json.loads((out / "build.json").read_text())["generation"]
    plan = plan_slots(2, ("vanilla",), seed=11)
    quota = Counter(f"vanilla/{s.category}/{s.type_id}" for s in plan)
    kept = Counter(f"vanilla/{r['category']}/{r['type_id']}" for r in tasks)
    assert gen["shortfall"] == {c: n - kept[c] for c, n in quota.items() if kept[c] < n}
    assert all(kept[c] <= n for c, n in quota.items())
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    assert json.loads(default_stats_path(out).read_text())["calls"] == 0
    assert _table(out, "tasks") == tasks
