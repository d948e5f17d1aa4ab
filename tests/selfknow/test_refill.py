"""The `line-of-duty-code` protocol (the authors' code) on the real SmolLM2 model:
temperature 1.0 for generation and classification, and quarantined slots refilled (seeded,
cached rounds) until every class x type cell meets its quota, or the shortfall is named per
cell."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from nabench.pipelines.registry import parse_recipe, run_recipe
from nabench.pipelines.selfknow import default_stats_path
from nabench.pipelines.skeleton import BuildOptions
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


@pytest.mark.slow
def test_line_of_duty_meets_every_quota_or_names_the_shortfall(
    tmp_path: Path, llama_cpp: Any
) -> None:
    out = tmp_path / "sk"
    recipe = parse_recipe(RECIPE, "refill")
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    tasks, quarantine = _table(out, "tasks"), _table(out, "quarantine")
    manifest = json.loads((out / "build.json").read_text())
    gen = manifest["generation"]
    assert manifest["protocol"]["name"] == "line-of-duty-code"
    assert {r["temperature"] for r in tasks + quarantine} == {1.0}
    assert {r["temperature"] for r in _table(out, "classifications")} <= {1.0}

    plan = plan_slots(5, ("vanilla",), seed=11)
    quota = Counter(f"vanilla/{s.category}/{s.type_id}" for s in plan)
    kept = Counter(f"vanilla/{r['category']}/{r['type_id']}" for r in tasks)
    expected = {c: n - kept[c] for c, n in quota.items() if kept[c] < n}
    assert gen["shortfall"] == expected  # each short cell named with its missing count
    assert all(kept[c] <= n for c, n in quota.items())  # a refill never overfills a cell
    assert len({r["task_id"] for r in tasks}) == len(tasks)
    card = (out / "README.md").read_text()
    if expected:
        for cell, missing in expected.items():
            assert f"`{cell}`: {missing}" in card
    else:
        assert "Every class × type cell met its planned quota." in card
        assert gen["kept_by_class"]["feasible"] == gen["kept_by_class"]["infeasible"] == 5
    # Each failed attempt stays quarantined with its round; refilled slots were re-asked.
    rounds = {r["refill_round"] for r in quarantine} | {r["refill_round"] for r in tasks}
    assert gen["refill_rounds"] == max(rounds)
    if quarantine:
        assert gen["refill_rounds"] >= 1
    stats = json.loads(default_stats_path(out).read_text())["extra"]["generation"]
    assert stats["extra"]["shortfall"] == expected

    # A rerun replays every round from the cache.
    run_recipe(recipe, BuildOptions(out=out, progress=False, protocol="line-of-duty-code"))
    assert json.loads(default_stats_path(out).read_text())["calls"] == 0
    assert _table(out, "tasks") == tasks
