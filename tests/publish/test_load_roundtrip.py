"""The staged tree is what `load_dataset` reads: same rows and features as the in-memory build."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from publish_helpers import LIMIT

from nabench.audit.eligibility import audit_items
from nabench.perturb import ItemColumns
from nabench.pipelines.na import make_builders
from nabench.pipelines.registry import load_recipe
from nabench.schemas.tables import features_for
from nabench.sources import get_source


@pytest.fixture(scope="module")
def in_memory(mmlu_dir: Path) -> dict[str, object]:
    recipe = load_recipe("mmlu-na")
    items = get_source("mmlu").load("test", location=str(mmlu_dir)).items.slice(0, LIMIT)
    builders = make_builders(recipe)
    na = tuple(
        t for b in builders if b.inserted_reason == "has_none_option" for t in b.inserted_texts
    )
    aota = tuple(
        t for b in builders if b.inserted_reason == "has_all_option" for t in b.inserted_texts
    )
    audit = audit_items(items, na, aota)
    columns = ItemColumns.from_table(audit.eligible)
    tables = {b.config_name: b.build(columns, recipe.seed) for b in builders}
    tables["excluded"] = audit.excluded
    return tables


@pytest.mark.parametrize(
    "config", ["original", "na_keyed", "na_distractor", "all_of_the_above", "excluded"]
)
def test_load_dataset_equals_build(
    staged_v1: Path, in_memory: dict[str, object], config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets import load_dataset

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    expected = in_memory[config]
    ds = load_dataset(str(staged_v1), config, split="test")
    assert ds.num_rows == expected.num_rows > 0  # type: ignore[attr-defined]
    assert ds.features == features_for(expected.schema)  # type: ignore[attr-defined]
    assert ds.to_list() == expected.to_pylist()  # type: ignore[attr-defined]


def test_card_metadata_matches_files(staged_v1: Path) -> None:
    readme = (staged_v1 / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---\n")[1])
    paths = {f["path"] for c in meta["configs"] for f in c["data_files"]}
    on_disk = {p.relative_to(staged_v1).as_posix() for p in staged_v1.rglob("*.parquet")}
    assert paths == on_disk
    assert meta["license"] == "mit"  # inherited from MMLU
    assert meta["task_categories"] == ["multiple-choice", "question-answering"]
    assert meta["source_datasets"] == ["cais/mmlu"]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert infos["na_keyed"]["splits"][0]["num_examples"] == in_rows(staged_v1, "na_keyed")


def in_rows(staged: Path, config: str) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(staged / config / "test-00000-of-00001.parquet").num_rows
