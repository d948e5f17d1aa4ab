"""`nabench validate DIR` catches any change to a build: a hand edit of an option, an answer
or an `original_*` field, a re-encoded file, an edited build.json or card, a deleted config.
Each exits non-zero and names the id with its 1-based row, or the file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.publish.plan import make_plan

FILE = "test-00000-of-00001.parquet"
ROW = 17


@pytest.fixture(scope="module")
def small_build(mmlu_na_200: Path) -> Path:
    return mmlu_na_200  # the session's `--limit 200` build; tests change a copy


@pytest.fixture()
def copy(small_build: Path, tmp_path: Path) -> Path:
    target = tmp_path / "b"
    shutil.copytree(small_build, target)
    return target


def _validate(folder: Path) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["validate", str(folder)])
    return res.exit_code, res.output


def _edit_rows(config: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], str]:
    """Rewrite one config with row ROW changed by `fn` (same schema); returns the row's id."""

    def edit(folder: Path) -> str:
        path = folder / config / FILE
        table = pq.read_table(path)
        rows = table.to_pylist()
        fn(rows[ROW])
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
        return str(rows[ROW]["id"])

    return edit


def _other_than(row: dict[str, Any], *taken: int | None) -> int:
    return next(j for j in range(len(row["choices"])) if j not in taken)


def _unreplaced_option(row: dict[str, Any]) -> None:
    row["choices"][_other_than(row, row["replaced_index"], row["answer"])] = "Jupiter"


def _answer(row: dict[str, Any]) -> None:
    row["answer"] = _other_than(row, row["answer"], row["replaced_index"])


def _original_choice(row: dict[str, Any]) -> None:
    j = _other_than(row, row["replaced_index"])
    row["original_choices"][j] = row["original_choices"][j] + " (edited)"


def _original_gold(row: dict[str, Any]) -> None:
    row["original_choices"][row["original_answer"]] = "Jupiter"


def _original_answer(row: dict[str, Any]) -> None:
    row["original_answer"] = (row["original_answer"] + 1) % 4
    row["answer"] = row["original_answer"]


def _question(row: dict[str, Any]) -> None:
    row["question"] = row["question"] + " (edited)"


ROW_EDITS = [
    ("na_keyed option not replaced", "na_keyed", _unreplaced_option, "unreplaced_unchanged"),
    (
        "na_distractor option not replaced",
        "na_distractor",
        _unreplaced_option,
        "unreplaced_unchanged",
    ),
    ("na_distractor answer", "na_distractor", _answer, "na_distractor_key_is_gold"),
    ("na_keyed answer", "na_keyed", _answer, "na_keyed_key_is_na"),
    (
        "original option",
        "original",
        lambda r: r["choices"].__setitem__(0, "Jupiter"),
        "original_unchanged",
    ),
    # an `original` row naming an inserted text or a replaced option (no source row does)
    (
        "original na_text",
        "original",
        lambda r: r.__setitem__("na_text", r["choices"][r["answer"]]),
        "original_unchanged",
    ),
    (
        "original replaced_index",
        "original",
        lambda r: r.__setitem__("replaced_index", r["answer"]),
        "original_unchanged",
    ),
    ("original_choices, not replaced", "na_keyed", _original_choice, "unreplaced_unchanged"),
    ("original_choices, the gold", "na_keyed", _original_gold, "original_fields_match"),
    ("original_answer", "all_of_the_above", _original_answer, "original_fields_match"),
    ("question", "na_distractor", _question, "original_fields_match"),
    (
        "aota option",
        "all_of_the_above",
        lambda r: r["choices"].__setitem__(1, "Jupiter"),
        "aota_appended",
    ),
]


@pytest.mark.parametrize(
    ("config", "edit", "rule"), [e[1:] for e in ROW_EDITS], ids=[e[0] for e in ROW_EDITS]
)
def test_row_edit_is_named(
    copy: Path, config: str, edit: Callable[[dict[str, Any]], None], rule: str
) -> None:
    assert _validate(copy)[0] == 0
    item_id = _edit_rows(config, edit)(copy)
    code, output = _validate(copy)
    assert code == 1, output
    assert f"{config}/{FILE}: [manifest_sha256]" in output
    assert f"{config}/{FILE} row {ROW + 1} id={item_id}: [{rule}]" in output, output


def test_reencoded_file_is_named(copy: Path) -> None:
    path = copy / "na_keyed" / FILE
    table = pq.read_table(path)
    pq.write_table(table, path, compression="gzip")  # same rows, other bytes
    assert pq.read_table(path).equals(table)
    code, output = _validate(copy)
    assert code == 1
    assert f"na_keyed/{FILE}: [manifest_sha256] sha256 differs from build.json" in output


def test_edited_manifest_is_named(copy: Path) -> None:
    manifest = json.loads((copy / "build.json").read_text())
    manifest["seed"] += 1
    (copy / "build.json").write_text(json.dumps(manifest, indent=2) + "\n")
    code, output = _validate(copy)
    assert code == 1
    assert "build.json: [card_seal] sha256 differs from the digest in README.md" in output


def test_edited_card_is_named(copy: Path) -> None:
    readme = copy / "README.md"
    readme.write_text(readme.read_text().replace("could not be perturbed", "could not be changed"))
    code, output = _validate(copy)
    assert code == 1
    assert "README.md: [manifest_sha256]" in output


def test_removed_seal_is_named(copy: Path) -> None:
    readme = copy / "README.md"
    lines = [
        ln
        for ln in readme.read_text().splitlines(True)
        if not ln.startswith("nabench_build_sha256:")
    ]
    readme.write_text("".join(lines))
    code, output = _validate(copy)
    assert code == 1
    assert "README.md: [card_seal] names no build.json digest" in output


def test_deleted_config_is_named(copy: Path) -> None:
    shutil.rmtree(copy / "na_distractor")
    code, output = _validate(copy)
    assert code == 1
    assert f"na_distractor/{FILE}: [manifest_file_present]" in output
    assert f"na_distractor/{FILE}: [card_config_present]" in output


def test_deleted_manifest_is_named(copy: Path) -> None:
    (copy / "build.json").unlink()
    code, output = _validate(copy)
    assert code == 1
    assert "build.json: [manifest_present]" in output


def test_added_config_is_named(copy: Path) -> None:
    (copy / "extra").mkdir()
    shutil.copy(copy / "na_keyed" / FILE, copy / "extra" / FILE)
    code, output = _validate(copy)
    assert code == 1
    assert f"extra/{FILE}: [manifest_file_listed]" in output


def test_published_tree_still_validates(small_build: Path, tmp_path: Path) -> None:
    """Publishing finalizes the card (tag, changelog) and re-seals it with the updated
    build.json: the tree a release holds passes `nabench validate` as built."""
    plan = make_plan(small_build, "me/mmlu-na", version="1.0.0")
    target = tmp_path / "published"
    for planned in plan.adds:
        (target / planned.path).parent.mkdir(parents=True, exist_ok=True)
        (target / planned.path).write_bytes(planned.content)
    assert (target / "README.md").read_bytes() != (small_build / "README.md").read_bytes()
    code, output = _validate(target)
    assert code == 0, output
