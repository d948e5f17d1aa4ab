"""Forgeries a validator must not accept (issue 24 items 3 and 4), and one validator per
kind shared by the build and `nabench validate` (issue 22 item 2).

A forger can recompute every sha256 and the card seal (they are unkeyed: `reseal` below
does it), so the checks here are the ones that hold without a key: the kind inferred from
the content, each config holding its own variant, every row's seed the build's and its
draws that seed's, card entries inside their config, no symlink, and, with `--source`, a
rebuild compared row by row.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.core.card_seal import card_sha256, seal_card
from nabench.core.errors import ValidationFailed
from nabench.perturb.na_keyed import NAKeyed
from nabench.perturb.rules import config_variant
from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.publish.plan import PublishError, make_plan
from nabench.validate import validate_path
from nabench.validate.kinds import Part, validate_na

FILE = "test-00000-of-00001.parquet"
LIMIT = 80


def _build(source: Path, out: Path) -> Path:
    build(
        load_recipe("arc-na"),
        BuildOptions(source=str(source), out=out, labels="none", limit=LIMIT, progress=False),
    )
    return out


@pytest.fixture(scope="module")
def arc_build(tmp_path_factory: pytest.TempPathFactory, arc_dir: Path) -> Path:
    return _build(arc_dir, tmp_path_factory.mktemp("forgery") / "arc-na")


@pytest.fixture()
def copy(arc_build: Path, tmp_path: Path) -> Path:
    target = tmp_path / "b"
    shutil.copytree(arc_build, target, symlinks=True)
    return target


def reseal(folder: Path) -> None:
    """What a forger does after editing: every hash in build.json and the card's seal
    recomputed, so the whole-folder rules see a consistent tree."""
    croissant = folder / "croissant.json"  # it lists each file's sha256 too
    if croissant.exists():
        data = json.loads(croissant.read_text("utf-8"))
        for node in data.get("distribution", []):
            if (folder / str(node.get("contentUrl"))).is_file():
                node["sha256"] = hashlib.sha256(
                    (folder / node["contentUrl"]).read_bytes()
                ).hexdigest()
        croissant.write_text(json.dumps(data, indent=2), "utf-8")
    manifest = json.loads((folder / "build.json").read_text("utf-8"))
    readme = (folder / "README.md").read_bytes()
    for rel in manifest["files"]:
        data = (folder / rel).read_bytes()
        manifest["files"][rel] = (
            card_sha256(data) if rel == "README.md" else hashlib.sha256(data).hexdigest()
        )
    raw = json.dumps(manifest, indent=2).encode("utf-8")
    (folder / "build.json").write_bytes(raw)
    (folder / "README.md").write_text(seal_card(readme.decode("utf-8"), raw), "utf-8")


def _rewrite(path: Path, fn: Callable[[dict[str, Any]], None]) -> None:
    table = pq.read_table(path)
    rows = table.to_pylist()
    for row in rows:
        fn(row)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def _validate(folder: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["validate", str(folder), "--max-errors", "500", *extra])
    return res.exit_code, res.output


def _rules(output: str) -> set[str]:
    return set(re.findall(r"\[([a-z_]+)\]", output))


# -- one validator, run by the build and by `nabench validate` ---------------------------


def test_build_rejects_a_table_validate_rejects(
    arc_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder whose rows pass every row rule but name another question than their
    `original` row: `nabench validate` always rejected that (original_fields_match); the
    build, which ran fewer rules, wrote it. Now the build runs validate's validator."""
    real = NAKeyed.build

    def tampered(self: NAKeyed, items: Any, seed: int) -> pa.Table:
        table = real(self, items, seed)
        questions = table.column("question").to_pylist()
        questions[3] = questions[3] + " (edited)"
        i = table.column_names.index("question")
        return table.set_column(i, "question", pa.array(questions, pa.string()))

    monkeypatch.setattr(NAKeyed, "build", tampered)
    out = tmp_path / "arc-na"
    with pytest.raises(ValidationFailed, match=r"na_keyed/test.*original_fields_match"):
        _build(arc_dir, out)
    assert not (out / "build.json").exists()


def test_card_lists_exactly_the_rules_that_ran(arc_build: Path) -> None:
    readme = (arc_build / "README.md").read_text("utf-8")
    block = readme.split("0 violations of:", 1)[1].split("## ", 1)[0]
    listed = re.findall(r"^- `([a-z_]+)`: ", block, re.M)
    parts = [
        Part(p.parent.name, "test", pq.read_table(p), p.relative_to(arc_build).as_posix())
        for p in sorted(arc_build.glob("*/*.parquet"))
    ]
    seed = json.loads((arc_build / "build.json").read_text("utf-8"))["seed"]
    ran = validate_na(parts, seed).rules
    assert listed == [r.name for r in ran]
    variants = {config_variant(p.config) for p in parts if p.config not in {"excluded", "labels"}}
    assert variants == {"original", "na_keyed", "na_distractor", "na_mixed", "all_of_the_above"}
    for rule in ran:  # every listed rule applies to a variant this build has
        assert rule.variants is None or variants & set(rule.variants), rule.name
    assert not [n for n in listed if n.startswith(("na_keyed_last", "foreign_key"))]
    assert {"id_in_original", "variant_of_config", "aota_appended"} <= set(listed)
    assert {"seed_of_build", "na_distractor_drawn", "na_mixed_drawn"} <= set(listed)


# -- forgeries caught without the source ------------------------------------------------


def test_kind_switch_keeps_every_row_check_and_publish_refuses(copy: Path) -> None:
    manifest = json.loads((copy / "build.json").read_text("utf-8"))
    manifest["kind"] = "selfknow"
    (copy / "build.json").write_text(json.dumps(manifest), "utf-8")
    reseal(copy)
    _rewrite(copy / "na_keyed" / FILE, lambda r: r.update(answer=(r["answer"] + 1) % 4))
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert "[kind_matches_content] declares kind 'selfknow' but holds a 'na' build" in output
    assert "na_keyed_key_is_na" in _rules(output)  # the row rules still ran
    with pytest.raises(PublishError, match="fails validation"):
        make_plan(copy, "org/arc-na")


def test_config_replaced_by_a_copy_of_original(copy: Path) -> None:
    shutil.copyfile(copy / "original" / FILE, copy / "na_keyed" / FILE)
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert "[variant_of_config] variant 'original' in config 'na_keyed'" in output


def test_card_entry_pointing_into_another_config(copy: Path) -> None:
    readme = (copy / "README.md").read_text("utf-8")
    forged = readme.replace(f"path: na_keyed/{FILE}", f"path: original/{FILE}", 1)
    assert forged != readme
    (copy / "README.md").write_text(forged, "utf-8")
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert "[card_config_folder] config 'na_keyed' points at 'original/" in output


def test_symlinked_config_is_refused_by_validate_and_publish(copy: Path) -> None:
    shutil.rmtree(copy / "na_keyed")
    (copy / "na_keyed").symlink_to("original", target_is_directory=True)
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert "na_keyed: [no_symlink] a symlink in the build" in output
    with pytest.raises(PublishError):
        make_plan(copy, "org/arc-na")


def test_a_folder_that_is_no_build_says_so_in_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True)
    (results / "run.json").write_text("{}", "utf-8")
    pq.write_table(pa.table({"item_id": ["a"], "score": [1.0]}), results / "runs" / "x.parquet")
    code, output = _validate(results)
    assert code != 0
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "not a nabench build" in lines[0], output


def test_a_deeply_nested_build_json_is_one_line(tmp_path: Path, copy: Path) -> None:
    """build.json's kind is read with the bounded loader too (a plain json.loads ended in
    `internal error: RecursionError`), in a folder that is no build and in a build."""
    deep = '{"kind": ' + "[" * 100_000 + "]" * 100_000 + "}"
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "build.json").write_text(deep, "utf-8")
    code, output = _validate(folder)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, output
    assert "not a nabench build (build.json: nested deeper than" in lines[0]
    (copy / "build.json").write_text(deep, "utf-8")
    code, output = _validate(copy)
    assert code == 1 and "internal error" not in output
    assert "[manifest_readable]" in output


def _forge_row(folder: Path, config: str, row: int, fn: Callable[[dict[str, Any]], None]) -> str:
    """Row `row` of `config` edited by `fn`; returns its id."""
    item_id = pq.read_table(folder / config / FILE).column("id")[row].as_py()
    _rewrite(folder / config / FILE, lambda r: fn(r) if r["id"] == item_id else None)
    return str(item_id)


def test_forged_row_seed_is_named(copy: Path) -> None:
    """A row's `seed` is the build's seed (build.json): an edited one, rehashed, was accepted."""
    item_id = _forge_row(copy, "na_keyed", 4, lambda r: r.update(seed=r["seed"] + 1))
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert _rules(output) == {"seed_of_build"}, output
    assert f"id={item_id}: [seed_of_build]" in output


def _move_na(row: dict[str, Any]) -> None:
    """NA moved to another distractor, the option it stood on restored: every other rule
    of the row still holds."""
    old, key = row["replaced_index"], row["answer"]
    new = next(j for j in range(len(row["choices"])) if j not in (old, key))
    row["choices"] = list(row["original_choices"])
    row["choices"][new] = row["na_text"]
    row["replaced_index"] = new


@pytest.mark.parametrize("config", ["na_distractor", "na_mixed"])
def test_forged_draw_is_named(copy: Path, config: str) -> None:
    """`replaced_index` is the seeded draw of the build's seed and the row's id: a forged draw,
    rehashed, was accepted (a shortcut planted through which option NA replaces)."""
    rows = pq.read_table(copy / config / FILE).to_pylist()
    row = next(i for i, r in enumerate(rows) if r["replaced_index"] != r["answer"])
    item_id = _forge_row(copy, config, row, _move_na)
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert _rules(output) == {f"{config}_drawn"}, output
    assert f"row {row + 1} id={item_id}: [{config}_drawn]" in output


def test_reseeded_build_without_new_draws_is_named(copy: Path) -> None:
    """build.json's seed and every row's changed together: the draws are not that seed's."""
    manifest = json.loads((copy / "build.json").read_text("utf-8"))
    manifest["seed"] += 1
    (copy / "build.json").write_text(json.dumps(manifest), "utf-8")
    for path in copy.glob(f"*/{FILE}"):
        if path.parent.name != "excluded":
            _rewrite(path, lambda r: r.update(seed=r["seed"] + 1))
    reseal(copy)
    code, output = _validate(copy)
    assert code == 1
    assert _rules(output) == {"na_distractor_drawn", "na_mixed_drawn"}, output


# -- consistent forgeries: only a rebuild from the source catches them ------------------


def _question_everywhere(folder: Path) -> str:
    """The same item's question changed in every config that holds it."""
    item_id = pq.read_table(folder / "original" / FILE).column("id")[5].as_py()

    def edit(row: dict[str, Any]) -> None:
        if row["id"] == item_id:
            row["question"] = row["question"] + " Explain."

    for path in folder.glob(f"*/{FILE}"):
        if path.parent.name != "excluded":
            _rewrite(path, edit)
    return str(item_id)


def _swap_phrasing(folder: Path) -> str:
    """`na_keyed` rows re-keyed to another NA phrasing, consistently in every row."""

    def edit(row: dict[str, Any]) -> None:
        old = row["na_text"]
        row["choices"] = ["Answer not found" if c == old else c for c in row["choices"]]
        row["na_text"] = "Answer not found"

    _rewrite(folder / "na_keyed" / FILE, edit)
    return str(pq.read_table(folder / "na_keyed" / FILE).column("id")[0].as_py())


@pytest.mark.parametrize("forge", [_question_everywhere, _swap_phrasing])
def test_consistent_forgery_validates_alone_but_not_against_the_source(
    copy: Path, arc_dir: Path, forge: Callable[[Path], str]
) -> None:
    item_id = forge(copy)
    reseal(copy)
    assert not validate_path(copy).violations  # consistent: no rule without the source sees it
    code, output = _validate(copy, "--source", str(arc_dir))
    assert code == 1
    assert "[rebuild_matches]" in output
    assert item_id in output


def test_question_forgery_is_named_per_config(copy: Path, arc_dir: Path) -> None:
    item_id = _question_everywhere(copy)
    reseal(copy)
    _, output = _validate(copy, "--source", str(arc_dir))
    named = {
        line.split("/", 1)[0]
        for line in output.splitlines()
        if "[rebuild_matches]" in line and item_id in line and "question" in line
    }
    assert named == {"original", "na_keyed", "na_distractor", "na_mixed", "all_of_the_above"}


def test_build_from_another_source_is_named(arc_build: Path, arc_dir: Path, tmp_path: Path) -> None:
    """A build made by nabench itself from an edited source (a changed key) is consistent in
    every way; the recorded fingerprint and the rows differ from a rebuild from the source."""
    source = tmp_path / "arc"
    shutil.copytree(arc_dir, source)
    path = source / "ARC-Challenge" / FILE
    rows = pq.read_table(path).to_pylist()
    labels = rows[2]["choices"]["label"]
    rows[2]["answerKey"] = next(x for x in labels if x != rows[2]["answerKey"])
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    forged = _build(source, tmp_path / "forged")
    assert not validate_path(forged).violations
    code, output = _validate(forged, "--source", str(arc_dir))
    assert code == 1
    assert "[source_fingerprint]" in output
    assert "answer" in output and "[rebuild_matches]" in output


def test_untouched_build_validates_against_its_source(arc_build: Path, arc_dir: Path) -> None:
    code, output = _validate(arc_build, "--source", str(arc_dir))
    assert code == 0, output
    assert "compared every row with a rebuild" in output


def test_kind_switch_with_source_is_rebuilt_as_what_it_holds(copy: Path, arc_dir: Path) -> None:
    manifest = json.loads((copy / "build.json").read_text("utf-8"))
    manifest["kind"] = "selfknow"  # a selfknow build could not be rebuilt without models
    (copy / "build.json").write_text(json.dumps(manifest), "utf-8")
    reseal(copy)
    code, output = _validate(copy, "--source", str(arc_dir))
    assert code == 1
    assert _rules(output) == {"kind_matches_content"}, output
    assert "compared every row with a rebuild" in output


def test_publish_compares_with_a_rebuild_from_the_given_source(
    copy: Path, arc_dir: Path, tmp_path: Path
) -> None:
    """A build records a local source as `local:<name>`, so `publish` is told where it is:
    a consistent forgery is refused, the untouched build is compared and published."""
    target = tmp_path / "release"

    def publish(folder: Path, *extra: str) -> tuple[int, str]:
        args = ["publish", str(folder), "--repo-id", "org/arc-na", "--to", f"git:{target}"]
        res = CliRunner().invoke(main, [*args, *extra])
        return res.exit_code, res.output

    assert json.loads((copy / "build.json").read_text())["source"]["location"].startswith("local:")
    code, output = publish(copy)  # the recorded source is not a path here: said, not compared
    assert "was not compared with a rebuild" in output
    forged = tmp_path / "forged"
    shutil.copytree(copy, forged)
    item_id = _question_everywhere(forged)
    reseal(forged)
    code, output = publish(forged, "--source", str(arc_dir))
    assert code != 0 and "differs from a rebuild" in output and "nothing was published" in output
    code, output = publish(copy, "--source", str(arc_dir), "--version", "9.9.9")
    assert code == 0, output
    assert "compared every row with a rebuild" in output and "identical" in output
    assert item_id


# -- labels tables: the rules every labels reader applies ----------------------------------


def test_a_forged_labels_config_is_named(arc_dir: Path, tmp_path: Path) -> None:
    """A build's `labels` config (and a lone labels file) was skipped by every rule: a label
    row duplicated or `na_applicable` "yes", rehashed, validated OK. It now breaks the rules
    `agree` and `build --labels` read labels by."""
    ids = pq.read_table(arc_build_original(arc_dir, tmp_path)).column("id").to_pylist()
    labels = tmp_path / "labels.csv"
    labels.write_text("id,na_applicable\n" + "".join(f"{i},true\n" for i in ids))
    out = tmp_path / "lab"
    build(
        load_recipe("arc-na"),
        BuildOptions(source=str(arc_dir), out=out, labels=str(labels), limit=LIMIT,
                     progress=False),
    )  # fmt: skip
    assert _validate(out)[0] == 0
    part = next((out / "labels").glob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), part)
    manifest = json.loads((out / "build.json").read_text("utf-8"))
    manifest["counts"]["labels"]["test"] += 1  # the forger keeps the counts true too
    (out / "build.json").write_text(json.dumps(manifest, indent=2), "utf-8")
    reseal(out)
    code, output = _validate(out)
    assert code == 1 and _rules(output) == {"labels"}, output
    assert f"label id {table.column('id')[0].as_py()!r} appears more than once" in output


def arc_build_original(arc_dir: Path, tmp_path: Path) -> Path:
    return next(_build(arc_dir, tmp_path / "plain").glob("original/*.parquet"))


@pytest.mark.parametrize(
    ("rows", "says"),
    [([("a", True), ("a", False)], "label id 'a' appears more than once"),
     ([("a", "yes"), ("b", "no")], "column na_applicable holds text 'yes'"),
     ([(" ", True)], "has id ' '")],
    ids=["duplicate", "text", "blank-id"],
)  # fmt: skip
def test_a_lone_labels_file_breaking_a_reader_rule_fails_validate(
    tmp_path: Path, rows: list[tuple[str, object]], says: str
) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({"id": i, "na_applicable": v}) + "\n" for i, v in rows))
    code, output = _validate(path)
    assert code == 1 and says in output, output
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "na_applicable": true}\n{"id": "b", "na_applicable": null}\n')
    assert _validate(good)[0] == 0
