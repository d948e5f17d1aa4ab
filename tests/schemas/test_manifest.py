"""build.json as a model (`schemas.manifest`): what a build writes reads back byte for byte,
and a hostile build.json is a one-line error wherever a command reads one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nabench.core.errors import NabenchError
from nabench.pipelines.question_inference import read_build
from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.publish.plan import make_plan
from nabench.schemas.manifest import Manifest, manifest_from_bytes, parse_manifest
from nabench.stage.exports.export import resolve_lm_eval_source


@pytest.fixture(scope="module")
def arc_artifacts(tmp_path_factory: pytest.TempPathFactory, arc_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("arc-art") / "arc-artifacts"
    options = BuildOptions(source=str(arc_dir), out=out, limit=20, progress=False)
    return run_recipe(load_recipe("arc-artifacts"), options).out


def test_every_written_manifest_reads_back_to_its_own_bytes(
    mmlu_na_200: Path, arc_artifacts: Path
) -> None:
    for build in (mmlu_na_200, arc_artifacts):
        raw = (build / "build.json").read_bytes()
        manifest = manifest_from_bytes(raw)
        assert manifest.to_bytes() == raw
        assert manifest.files and manifest.counts
        assert manifest.source is not None and manifest.source.splits
    na = manifest_from_bytes((mmlu_na_200 / "build.json").read_bytes())
    assert (na.kind, na.recipe_name, na.limit, na.label_mode) == ("na", "mmlu-na", 200, "none")
    assert na.lm_eval is not None
    art = manifest_from_bytes((arc_artifacts / "build.json").read_bytes())
    assert art.kind == "artifacts" and art.fewshot and art.prompt_types and art.text


def test_key_order_and_unknown_keys_are_kept() -> None:
    data = {
        "zeta": [1, {"b": 2, "a": 1}],
        "seed": 7,
        "kind": "selfknow",
        "source": {"splits": {"test": {"rows_used": 3, "extra": True}}, "dataset": "d"},
        "limit": None,
    }
    manifest = parse_manifest(data, "build.json")
    assert json.dumps(manifest.record()) == json.dumps(data)
    manifest.files = {"a": "b"}
    assert list(manifest.record()) == [*data, "files"]


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper"),
        ('{"kind": "na", "counts": "lots", "files": {}}', "counts"),
        ('{"kind": "na", "seed": [1], "files": {}}', "seed"),
        # never coerced: re-staged, they would be written back as other values
        ('{"kind": "na", "seed": true, "files": {}}', "seed"),
        ('{"kind": "na", "seed": "123", "files": {}}', "seed"),
        ('{"kind": "na", "counts": {"original": {"test": 2.0}}, "files": {}}', "counts"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_hostile_manifest_is_one_line_wherever_it_is_read(
    tmp_path: Path, text: str, expect: str
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (build / "build.json").write_text(text)
    readers = [
        lambda: make_plan(build, "a/b"),
        lambda: read_build(build),
        lambda: resolve_lm_eval_source(build),
    ]
    for read in readers:
        with pytest.raises(NabenchError) as caught:
            read()
        message = str(caught.value)
        assert expect in message and "\n" not in message, message


def test_validate_reports_an_unreadable_manifest_as_a_violation(
    mmlu_na_200: Path, tmp_path: Path
) -> None:
    from nabench.validate import validate_path

    build = tmp_path / "b"
    shutil.copytree(mmlu_na_200, build)
    record = json.loads((build / "build.json").read_text())
    record["counts"] = {"na_keyed": {"test": "many"}}
    (build / "build.json").write_text(json.dumps(record))
    rules = {v.rule for v in validate_path(build).violations}
    assert "manifest_readable" in rules


def test_a_manifest_needs_no_field_to_be_read() -> None:
    empty = Manifest()
    assert (empty.kind, empty.recipe_version, empty.repo_id, empty.counts) == (
        None,
        None,
        None,
        {},
    )
    assert empty.record() == {}
