"""The audit on the full MMLU test split (real data): no non-excluded row holds a flagged
option but the inserted one, the items the issue found are excluded with a reason, and the
README's exclusion numbers are the ones a build gives."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pyarrow.parquet as pq

from nabench.pipelines.skeleton import BuildResult

REPO = Path(__file__).resolve().parents[2]

# Written from the issue's list of wordings that reached every variant, independently of
# nabench/audit/option_patterns.yaml (Python `re`, case-insensitive, whole option).
_L = r"\(?[a-e]\)?\.?"
MISSED = re.compile(
    r"none of (the )?above|all of (the )?above|any of (the above|these)"
    rf"|^(both |either |options )?{_L}((, |,? and |,? or | & ){_L})+( only| are correct)?$"
    # a whole option quantifying over a counted or named set ("all three structures.",
    # "Both of the interventions", "None of the interventions")
    r"|^(all|both|each) (of )?(the )?(two|three|four|five|\d)( \w+)?$"
    r"|^(all|both|each|none|neither) of the \w+s$",
    re.IGNORECASE,
)
_INVISIBLE = re.compile("[\u200b-\u200f\u2060\ufeff]")
# Issue 23's held-out class, also written independently: letters pointing at other options
# inside a longer sentence ("neither A nor B; an ethic may ...", "All of (a), (b) and (c) ...").
IN_SENTENCE = re.compile(
    rf"^(both|either|neither) {_L} (and|or|nor) {_L}\W.+|\b(all|any|none) of \([a-e]\),",
    re.IGNORECASE,
)


def _plain(text: str) -> str:
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).strip().rstrip(".!?;: ")


def test_no_flagged_option_outside_excluded(mmlu_na_full: BuildResult) -> None:
    configs = [c for c in mmlu_na_full.counts if c not in {"excluded", "labels"}]
    assert len(configs) == 8  # 4 na_keyed phrasings, na_distractor, na_mixed, aota, original
    for config in configs:
        table = pq.read_table(mmlu_na_full.out / config / "test-00000-of-00001.parquet")
        for row in table.select(["id", "choices", "na_text"]).to_pylist():
            stray = [c for c in row["choices"] if c != row["na_text"] and MISSED.search(_plain(c))]
            assert not stray, f"{config} {row['id']}: {stray}"


def test_no_option_refers_to_options_inside_a_sentence(mmlu_na_full: BuildResult) -> None:
    built = [c for c in mmlu_na_full.counts if c not in {"excluded", "labels"}]
    for config in built:
        table = pq.read_table(mmlu_na_full.out / config / "test-00000-of-00001.parquet")
        for row in table.select(["id", "choices"]).to_pylist():
            stray = [c for c in row["choices"] if IN_SENTENCE.search(_plain(c))]
            assert not stray, f"{config} {row['id']}: {stray}"
    excluded = pq.read_table(mmlu_na_full.out / "excluded" / "test-00000-of-00001.parquet")
    caught = [
        row["reasons"]
        for row in excluded.select(["choices", "reasons"]).to_pylist()
        if any(IN_SENTENCE.search(_plain(c)) for c in row["choices"])
    ]
    assert caught and all("refers_to_other_options" in r for r in caught)


def test_issue_items_are_excluded_with_a_reason(mmlu_na_full: BuildResult) -> None:
    excluded = pq.read_table(mmlu_na_full.out / "excluded" / "test-00000-of-00001.parquet")
    reasons = dict(
        zip(excluded.column("id").to_pylist(), excluded.column("reason").to_pylist(), strict=True)
    )
    assert reasons["mmlu/all/test/01967"] == "has_none_option"  # 'None of above.'
    assert reasons["mmlu/all/test/00288"] == "refers_to_other_options"  # 'A and B'
    assert reasons["mmlu/all/test/01995"] == "has_all_option"  # 'all of above.'
    # keys that meant "all of the above" without saying so (wrong na_keyed rows before v5)
    assert reasons["mmlu/all/test/00216"] == "has_all_option"  # 'all three structures.'
    assert reasons["mmlu/all/test/09677"] in {"has_all_option", "has_none_option"}
    issue_ids = {f"mmlu/all/test/{i:05d}" for i in (1967, 288, 1995, 216, 9677)}
    for config in mmlu_na_full.counts:
        if config in {"excluded", "labels"}:
            continue
        ids = set(
            pq.read_table(mmlu_na_full.out / config / "test-00000-of-00001.parquet", columns=["id"])
            .column("id")
            .to_pylist()
        )
        assert not ids & issue_ids, config


def _readme_numbers() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_numbers", REPO / "scripts" / "readme_numbers.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_exclusion_numbers_come_from_a_build(mmlu_na_full: BuildResult) -> None:
    numbers = _readme_numbers()
    readme = (REPO / "README.md").read_text("utf-8")
    total = sum(mmlu_na_full.counts["original"].values()) + mmlu_na_full.exclusions["total"]
    assert total == 14_042
    assert numbers.section(readme) == numbers.render(mmlu_na_full.exclusions, total), (
        "README's MMLU exclusion paragraph is stale: run python scripts/readme_numbers.py"
    )
    # and the sentence states the per-reason counts of this build
    for reason, n in mmlu_na_full.exclusions["by_reason"].items():
        assert f"{n:,} `{reason}`" in numbers.section(readme)


def test_readme_build_bench_row_counts_come_from_a_build(mmlu_na_full: BuildResult) -> None:
    """The build bench's row in the README names the tables a full build writes."""
    files = sum(len(splits) for splits in mmlu_na_full.counts.values())
    rows = sum(sum(splits.values()) for splits in mmlu_na_full.counts.values())
    readme = (REPO / "README.md").read_text("utf-8")
    assert f"14,042 items → {rows:,} rows in {files} parquet files" in readme, (files, rows)
