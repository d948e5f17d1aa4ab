"""croissant.json of an mmlu-na build: listed in build.json, valid for mlcroissant, its records
the rows `datasets` loads, and its Responsible-AI fields what the manifest and card say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.manifest import Manifest
from nabench.sources import get_source
from nabench.validate import validate_path
from nabench.validate.croissant import check_croissant, mlcroissant_problem

LIMIT = 120


@pytest.fixture(scope="module")
def small_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    out = tmp_path_factory.mktemp("croissant") / "mmlu-na"
    options = BuildOptions(source=str(mmlu_dir), out=out, labels="none", limit=LIMIT)
    return build(load_recipe("mmlu-na"), options)


def _croissant(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    return data


def _plain(value: Any) -> Any:
    """mlcroissant hands text back as bytes and numbers as numpy scalars."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def test_croissant_is_listed_hashed_and_valid(small_build: BuildResult) -> None:
    out = small_build.out
    manifest = json.loads((out / "build.json").read_text())
    assert "croissant.json" in manifest["files"]
    assert mlcroissant_problem(out / "croissant.json") is None
    report = validate_path(out)
    assert report.violations == []
    data = _croissant(out)
    # one record set per config/split, one file per parquet file, with build.json's sha256
    expected = {f"{c}/{s}" for c, per in manifest["counts"].items() for s in per}
    assert {rs["@id"] for rs in data["recordSet"]} == expected
    files = {f["contentUrl"]: f["sha256"] for f in data["distribution"]}
    parquet = {k: v for k, v in manifest["files"].items() if k.endswith(".parquet")}
    assert files == parquet


def test_na_keyed_records_equal_the_rows_datasets_loads(small_build: BuildResult) -> None:
    import datasets
    import mlcroissant as mlc

    out = small_build.out
    rows = datasets.load_dataset(str(out), "na_keyed", split="test").to_list()
    records = list(mlc.Dataset(jsonld=str(out / "croissant.json")).records("na_keyed/test"))
    prefix = "na_keyed/test/"
    loaded = [{k.removeprefix(prefix): _plain(v) for k, v in r.items()} for r in records]
    assert len(rows) == small_build.counts["na_keyed"]["test"] > 0
    assert loaded == rows


def test_field_types_follow_the_row_schema(small_build: BuildResult) -> None:
    fields = {
        f["name"]: f
        for rs in _croissant(small_build.out)["recordSet"]
        if rs["@id"] == "na_keyed/test"
        for f in rs["field"]
    }
    assert fields["question"]["dataType"] == "sc:Text"
    assert fields["answer"]["dataType"] == "sc:Integer"
    assert fields["choices"]["dataType"] == "sc:Text" and fields["choices"]["cr:isArray"] is True
    assert "cr:isArray" not in fields["question"]


def test_core_and_rai_fields_come_from_manifest_and_card(small_build: BuildResult) -> None:
    out = small_build.out
    data = _croissant(out)
    manifest = json.loads((out / "build.json").read_text())
    mmlu = get_source("mmlu")
    assert data["license"] == mmlu.license and data["citeAs"] == mmlu.citation
    assert data["version"] == manifest["recipe"]["version"]
    collection = data["rai:dataCollection"]
    assert manifest["source"]["location"] in collection
    assert manifest["source"]["splits"]["test"]["fingerprint"] in collection
    preprocessing = data["rai:dataPreprocessingProtocol"]
    audit = next(line for line in preprocessing if line.startswith("Eligibility audit"))
    assert f"{manifest['exclusions']['total']} item(s)" in audit
    for reason, n in manifest["exclusions"]["by_reason"].items():
        assert f"{reason}: {n}" in audit
    variants = [line for line in preprocessing if line.startswith("Perturbation `")]
    assert len(variants) == len(manifest["recipe"]["variants"])
    assert any("None of the options given is correct" in line for line in variants)
    # the card's limitations, word for word (the --limit line included)
    readme = (out / "README.md").read_text()
    section = readme.split("## Limitations\n", 1)[1].split("\n## ", 1)[0]
    card_lines = [line[2:] for line in section.splitlines() if line.startswith("- ")]
    assert data["rai:dataLimitations"] == card_lines
    assert any("--limit" in line for line in card_lines)
    assert data["rai:personalSensitiveInformation"]
    assert data["rai:dataUseCases"]
    assert "The items were not screened for NA-applicability" in str(
        data["rai:dataAnnotationProtocol"]
    )


def test_validate_names_a_croissant_that_disagrees(
    small_build: BuildResult, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(small_build.out, copy)
    files = json.loads((copy / "build.json").read_text())["files"]
    data = _croissant(copy)
    data["distribution"][0]["sha256"] = "0" * 64
    (copy / "croissant.json").write_text(json.dumps(data))
    rules = {v.rule for v in check_croissant(copy, files)}
    assert rules == {"croissant_files"}
    assert {"manifest_sha256", "croissant_files"} <= {
        v.rule for v in validate_path(copy).violations
    }

    data["recordSet"][0]["field"][0]["source"]["fileObject"]["@id"] = "no/such-file.parquet"
    (copy / "croissant.json").write_text(json.dumps(data))
    broken = check_croissant(copy, files)
    assert [v.rule for v in broken] == ["croissant_valid"]
    assert "\n" not in broken[0].message

    # a remote @context is refused before mlcroissant could fetch it; bad JSON is one line
    (copy / "croissant.json").write_text(json.dumps({**data, "@context": "http://127.0.0.1:9/"}))
    remote = check_croissant(copy, files)
    assert [(v.rule, v.message) for v in remote] == [
        ("croissant_valid", "no inline JSON-LD @context object")
    ]
    (copy / "croissant.json").write_text("{" * 100)
    (bad,) = check_croissant(copy, files)
    assert bad.rule == "croissant_valid" and "\n" not in bad.message


def test_mlcroissant_verdict_follows_the_bytes_not_the_path(
    small_build: BuildResult, tmp_path: Path
) -> None:
    """The verdict is remembered per content: a file rewritten in place is judged anew, and
    the same bytes under another name get the same verdict."""
    valid = (small_build.out / "croissant.json").read_bytes()
    data = json.loads(valid)
    data["recordSet"][0]["field"][0]["source"]["fileObject"]["@id"] = "no/such-file.parquet"
    broken = json.dumps(data).encode()
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_bytes(valid)
    assert mlcroissant_problem(first) is None
    first.write_bytes(broken)
    problem = mlcroissant_problem(first)
    assert problem is not None and "no/such-file.parquet" in problem
    second.write_bytes(broken)
    assert mlcroissant_problem(second) == problem
    first.write_bytes(valid)
    assert mlcroissant_problem(first) is None
    assert mlcroissant_problem(tmp_path / "missing.json") == (
        f"mlcroissant cannot read it: [Errno 2] No such file or directory: "
        f"'{tmp_path / 'missing.json'}'"
    )


def test_chat_message_columns_are_sub_fields(tmp_path: Path) -> None:
    """na-train's SFT rows (a list of role/content structs) load back through mlcroissant."""
    import mlcroissant as mlc
    import pyarrow as pa

    from nabench.schemas.na_train import SFT_ARROW
    from nabench.stage.hub_layout import StagedTable, StagingArea

    rows = {
        "messages": [[{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A"}]],
        "id": ["mmlu/all/test/00001"],
        "variant": ["na_keyed"],
        "gold": ["A"],
        "sample_index": [0],
        "seed": [7],
    }
    out = tmp_path / "sft"
    manifest = Manifest.model_validate(
        {"kind": "na-train", "recipe": {"name": "t", "version": "1.0.0"}}
    )
    with StagingArea(out) as area:
        area.add(StagedTable("sft", "train", pa.table(rows, schema=SFT_ARROW)))
        area.commit(lambda _c, _i: "---\nlicense: mit\n---\n", manifest)
    assert mlcroissant_problem(out / "croissant.json") is None
    (record,) = mlc.Dataset(jsonld=str(out / "croissant.json")).records("sft/train")
    messages = [
        {k.rsplit("/", 1)[1]: _plain(v) for k, v in m.items()} for m in record["sft/train/messages"]
    ]
    assert messages == rows["messages"][0]
    assert _plain(record["sft/train/seed"]) == 7


def test_all_null_label_columns_get_the_row_models_type(tmp_path: Path, mmlu_dir: Path) -> None:
    """A labels file without model / guideline_version: those columns are all null (Arrow
    type null); croissant types them as the row model does and the records still load."""
    import datasets
    import mlcroissant as mlc

    ids = [f"mmlu/all/test/{k:05d}" for k in range(10)]
    labels = tmp_path / "labels.csv"
    labels.write_text("id,na_applicable\n" + "".join(f"{i},true\n" for i in ids))
    out = tmp_path / "o"
    options = BuildOptions(source=str(mmlu_dir), out=out, labels=str(labels), limit=30)
    build(load_recipe("mmlu-na"), options)
    assert mlcroissant_problem(out / "croissant.json") is None
    (labels_set,) = [rs for rs in _croissant(out)["recordSet"] if rs["@id"] == "labels/test"]
    types = {f["name"]: f["dataType"] for f in labels_set["field"]}
    assert types["model"] == "sc:Text" and types["na_applicable"] == "sc:Boolean"
    records = list(mlc.Dataset(jsonld=str(out / "croissant.json")).records("labels/test"))
    rows = datasets.load_dataset(str(out), "labels", split="test").to_list()
    loaded = [{k.removeprefix("labels/test/"): _plain(v) for k, v in r.items()} for r in records]
    assert loaded == rows and len(rows) == 10
