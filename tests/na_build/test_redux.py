"""MMLU-Redux as an audit source, on a Redux copy made from the shared MMLU at test time."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from redux_fixture import LIMIT, Expected, make_redux

from nabench.core.errors import NabenchError
from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe, parse_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.redux import DEFAULT_FLAGGED, AuditSpec, ReduxSpec
from nabench.validate import validate_path

SPLIT_FILE = "test-00000-of-00001.parquet"


def _build(mmlu_dir: Path, out: Path, spec: ReduxSpec) -> BuildResult:
    recipe = load_recipe("mmlu-na").model_copy(update={"audit": AuditSpec(redux=spec)})
    options = BuildOptions(source=str(mmlu_dir), out=out, labels="none", limit=LIMIT)
    return build(recipe, options)


def _item_id(row: int) -> str:
    return f"mmlu/all/test/{row:05d}"


@pytest.fixture(scope="module", params=["hub-layout", "plain-folder"])
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path
) -> tuple[BuildResult, Expected]:
    root = tmp_path_factory.mktemp("redux")
    expected = make_redux(mmlu_dir, root / "redux", hub_layout=request.param == "hub-layout")
    result = _build(mmlu_dir, root / "mmlu-na", ReduxSpec(location=str(root / "redux")))
    return result, expected


def test_flagged_items_are_quarantined_with_their_reason(
    built: tuple[BuildResult, Expected],
) -> None:
    result, expected = built
    excluded = pq.read_table(result.out / "excluded" / SPLIT_FILE).to_pylist()
    redux_reasons = {r["id"]: [x for x in r["reasons"] if x.startswith("redux_")] for r in excluded}
    got = {i: rs for i, rs in redux_reasons.items() if rs}
    want = {
        _item_id(row): [f"redux_{t}"]
        for row, t in expected.error_types.items()
        if t in DEFAULT_FLAGGED
    }
    assert got == want
    assert len(want) == 2 * (2 * len(DEFAULT_FLAGGED) + 1)  # per subject: 2 per type + 1 shouted
    original = set(pq.read_table(result.out / "original" / SPLIT_FILE)["id"].to_pylist())
    assert not original & set(want)
    # `ok` and `expert` (recorded, not quarantined, by default) stay unless another rule
    # quarantines them
    other = {r["id"] for r in excluded}
    kept = {_item_id(r) for r, t in expected.error_types.items() if t in {"ok", "expert"}}
    assert kept - other <= original and len(kept - other) >= len(kept) - 2


def test_redux_config_and_manifest_report_the_join(built: tuple[BuildResult, Expected]) -> None:
    result, expected = built
    table = pq.read_table(result.out / "redux" / SPLIT_FILE).to_pylist()
    assert {r["id"]: r["error_type"] for r in table} == {
        _item_id(row): t for row, t in expected.error_types.items()
    }
    assert all(r["flagged"] == (r["error_type"] in DEFAULT_FLAGGED) for r in table)
    experts = [r for r in table if r["error_type"] == "expert"]
    assert experts and all(r["annotation_source"] for r in experts)
    summary = json.loads((result.out / "build.json").read_text())["redux"]
    assert summary["rows"] == expected.rows
    assert summary["joined"] == len(expected.error_types)
    assert len(summary["unmatched"]) == expected.unmatched
    assert {u["subject"] for u in summary["unmatched"]} == {"abstract_algebra", "anatomy"}
    assert summary["by_split"]["test"] == dict(
        sorted(Counter(expected.error_types.values()).items())
    )
    assert summary["missing_subjects"] == ["astronomy"]  # in the build, not in the fixture
    card = (result.out / "README.md").read_text()
    checked = len(expected.error_types)
    flagged = sum(t in DEFAULT_FLAGGED for t in expected.error_types.values())
    assert f"{checked} item(s) of this build were checked against MMLU-Redux" in card
    assert f"{flagged} item(s) were quarantined as `redux_<error_type>`" in card
    assert f"MMLU-Redux checked {checked} of the build's items" in card
    croissant = json.loads((result.out / "croissant.json").read_text())
    assert f"MMLU-Redux checked {checked} of the build's items" in str(
        croissant["rai:dataLimitations"]
    )
    redux_line = next(
        x for x in croissant["rai:dataPreprocessingProtocol"] if x.startswith("MMLU-Redux")
    )
    assert f"{flagged} item(s) quarantined" in redux_line
    assert validate_path(result.out).violations == []


@pytest.mark.parametrize("flag", [["expert"], []], ids=["expert-only", "annotate-only"])
def test_flag_set_is_configurable(tmp_path: Path, mmlu_dir: Path, flag: list[str]) -> None:
    expected = make_redux(mmlu_dir, tmp_path / "redux", hub_layout=False)
    spec = ReduxSpec(location=str(tmp_path / "redux"), flag=flag)  # type: ignore[arg-type]
    result = _build(mmlu_dir, tmp_path / "out", spec)
    excluded = pq.read_table(result.out / "excluded" / SPLIT_FILE).to_pylist()
    got = {r["id"] for r in excluded if any(x.startswith("redux_") for x in r["reasons"])}
    assert got == {_item_id(r) for r, t in expected.error_types.items() if t in flag}
    assert result.exclusions["by_reason"].get("redux_expert", 0) == len(got) == 4 * len(flag)
    annotations = pq.read_table(result.out / "redux" / SPLIT_FILE).to_pylist()
    assert len(annotations) == len(expected.error_types)  # annotated whether flagged or not
    assert {r["id"] for r in annotations if r["flagged"]} == got


def test_recipe_accepts_a_location_alone_and_refuses_non_mmlu() -> None:
    data = load_recipe("mmlu-na").model_dump(mode="json")
    data["audit"] = {"redux": "edinburgh-dawg/mmlu-redux-2.0"}
    recipe = parse_recipe(data, "x.yaml")
    assert recipe.audit.redux == ReduxSpec(location="edinburgh-dawg/mmlu-redux-2.0")
    assert recipe.audit.redux.flag == list(DEFAULT_FLAGGED)
    arc = load_recipe("arc-na").model_dump(mode="json")
    arc["audit"] = {"redux": "edinburgh-dawg/mmlu-redux-2.0"}
    with pytest.raises(NabenchError, match="applies to mmlu recipes only"):
        parse_recipe(arc, "x.yaml")
    data["audit"] = {"redux": {"location": "x", "flag": ["ok"]}}
    with pytest.raises(NabenchError, match="flag"):
        parse_recipe(data, "x.yaml")


def _one_subject(root: Path, rows: list[dict[str, object]]) -> Path:
    (root / "anatomy").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "anatomy" / "part.parquet")
    return root


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q", "choices": ["a", "b"], "error_type": "typo"}, "unknown error_type"),
        ({"question": "q", "choices": ["a", "b"]}, r"missing column\(s\) 'error_type'"),
    ],
)
def test_bad_redux_rows_are_one_line_errors(
    tmp_path: Path, mmlu_dir: Path, row: dict[str, object], message: str
) -> None:
    spec = ReduxSpec(location=str(_one_subject(tmp_path / "redux", [row])))
    with pytest.raises(NabenchError, match=message) as info:
        _build(mmlu_dir, tmp_path / "out", spec)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["absolute", "./relative"])
def test_a_missing_redux_location_is_a_clear_error(
    tmp_path: Path, mmlu_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The one missing-location message of every command (`./nowhere` asked the Hub)."""
    monkeypatch.chdir(tmp_path)
    location = str(tmp_path / "nowhere") if where == "absolute" else "./nowhere"
    message = f"audit.redux: {location!r} does not exist here and is no Hub id (ORG/NAME)"
    with pytest.raises(NabenchError) as info:
        _build(mmlu_dir, tmp_path / "out", ReduxSpec(location=location))
    assert str(info.value) == message


def test_contributions_check_against_a_release_holding_redux(
    built: tuple[BuildResult, Expected], mmlu_dir: Path
) -> None:
    """The `redux` config holds annotations, not perturbed rows: the duplicate check of
    contributions against a release skips it (it crashed reading `choices` from it)."""
    result, _ = built
    example = Path(__file__).resolve().parents[2] / "contributions"
    report = validate_path(example, sources={"mmlu": str(mmlu_dir)}, release=result.out)
    assert report.rows == 6
    assert [v for v in report.violations if v.rule != "duplicate_in_release"] == []


REDUX_SCHEMA = pa.schema(
    [("question", pa.string()), ("choices", pa.list_(pa.string())), ("error_type", pa.string())]
)
HUB_CARD = (
    "---\nconfigs:\n- config_name: anatomy\n  data_files:\n  - split: test\n"
    "    path: anatomy/test-*.parquet\n---\n"
)


def _refused(mmlu_dir: Path, tmp_path: Path, location: Path) -> str:
    with pytest.raises(NabenchError) as info:
        _build(mmlu_dir, tmp_path / "out", ReduxSpec(location=str(location)))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()
    return str(info.value)


@pytest.mark.parametrize("subject_folder", [None, "Anatomy"], ids=["empty", "no-build-subject"])
def test_a_redux_location_without_rows_for_the_build_is_refused(
    tmp_path: Path, mmlu_dir: Path, subject_folder: str | None
) -> None:
    """A folder holding no rows of any of MMLU's subjects would build with no Redux
    annotation at all (every subject `missing`); one line says so."""
    root = tmp_path / "redux"
    root.mkdir()
    if subject_folder is not None:  # rows, but under a name no MMLU subject has
        (root / subject_folder).mkdir()
        row = {"question": "q", "choices": ["a", "b"], "error_type": "ok"}
        pq.write_table(pa.Table.from_pylist([row]), root / subject_folder / "part.parquet")
    line = _refused(mmlu_dir, tmp_path, root)
    assert line.startswith("audit.redux: ") and str(root) in line, line
    assert "no rows for any of the" in line and "'abstract_algebra'" in line, line


@pytest.mark.parametrize("name", ["part.parquet", "part.jsonl"])
def test_an_empty_redux_file_is_refused_naming_it(
    tmp_path: Path, mmlu_dir: Path, name: str
) -> None:
    root = _one_subject(
        tmp_path / "redux", [{"question": "q", "choices": ["a"], "error_type": "ok"}]
    )
    empty = root / "anatomy" / name
    if name.endswith(".parquet"):
        pq.write_table(REDUX_SCHEMA.empty_table(), empty)
    else:
        empty.write_text("\n")
    line = _refused(mmlu_dir, tmp_path, root)
    assert line == f"audit.redux: {empty} has no rows", line


def test_an_empty_subject_config_of_a_hub_layout_is_refused(tmp_path: Path, mmlu_dir: Path) -> None:
    root = tmp_path / "redux"
    (root / "anatomy").mkdir(parents=True)
    pq.write_table(REDUX_SCHEMA.empty_table(), root / "anatomy" / "test-00000-of-00001.parquet")
    (root / "README.md").write_text(HUB_CARD)
    line = _refused(mmlu_dir, tmp_path, root)
    assert line.startswith("audit.redux: ") and "anatomy" in line and "no rows" in line, line
