"""Issue 24, findings 9 and 10: the smaller holes, each a clear one-line error now, and
`nabench report` naming the file and the problem for hostile results."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import ValidationError
from safety_helpers import nabench, tree_bytes

from nabench import recipes as shipped_recipes
from nabench.core.out_guard import remove_stale
from nabench.core.safe_load import UnsafeInput, load_yaml
from nabench.evaluation.external import _lm_eval_item
from nabench.perturb.recipe import Recipe
from nabench.pipelines.registry import load_recipe
from nabench.schemas.contribution import ContributionHeader

# -- finding 9 ------------------------------------------------------------------------------


def test_a_duplicated_yaml_key_is_refused() -> None:
    with pytest.raises(UnsafeInput, match=r"key 'seed' is given twice \(lines 1 and 2\)"):
        load_yaml("seed: 1\nseed: 2\n", "r.yaml")
    with pytest.raises(UnsafeInput, match="given twice"):
        load_yaml("{a: 1, a: 2}", "flow.yaml")
    assert load_yaml("base: &b {x: 1}\nuse: {<<: *b, y: 2}\n", "merge.yaml")["use"] == {
        "x": 1,
        "y": 2,
    }


@pytest.mark.parametrize("recipe", ["mmlu-na", "mmlu-artifacts", "selfknow", "mmlu-na-train"])
@pytest.mark.parametrize("seed", [True, "7", 7.0, 2**63])
def test_a_seed_must_be_an_integer(recipe: str, seed: object) -> None:
    """Every recipe kind's seed is one strict int64 (na-train took `seed: true` as 1, "7" as 7
    and 2**63, which no int64 seed column holds)."""
    model = type(load_recipe(recipe))
    data = yaml.safe_load((Path(shipped_recipes.__file__).parent / f"{recipe}.yaml").read_text())
    with pytest.raises(ValidationError):
        model.model_validate({**data, "seed": seed})
    assert model.model_validate({**data, "seed": 7}).seed == 7
    assert Recipe.model_fields["seed"].annotation == model.model_fields["seed"].annotation


def test_a_row_file_listed_twice_is_refused() -> None:
    header = {
        "name": "x1", "author": "a <a@b>", "licence": "mit",
        "description": "listed twice on purpose", "source": {"dataset": "mmlu", "split": "test"},
    }  # fmt: skip
    with pytest.raises(ValidationError, match=r"lists rows\.jsonl more than once"):
        ContributionHeader.model_validate({**header, "data": ["rows.jsonl", "rows.jsonl"]})
    assert ContributionHeader.model_validate({**header, "data": ["rows.jsonl"]})


def _sample(answer: object, lls: list[float]) -> dict[str, object]:
    return {"doc": {"id": "q1", "choices": ["a", "b", "c", "d"], "answer": answer},
            "filtered_resps": [[ll, False] for ll in lls]}  # fmt: skip


@pytest.mark.parametrize("lls", [[float("nan"), -1, -2, -3], [float("inf"), -1, -2, -3]])
def test_non_finite_lm_eval_log_likelihoods_are_refused(lls: list[float]) -> None:
    from nabench.core.errors import NabenchError

    with pytest.raises(NabenchError, match="not all finite"):
        _lm_eval_item(_sample(0, lls), generative=False)


def test_an_interrupted_swap_restores_the_previous_build(tmp_path: Path) -> None:
    """Killed between the swap's two renames: `out` gone, the old tree in .NAME.old-*/tree.
    The next build restored nothing and deleted it."""
    out = tmp_path / "b"
    old = tmp_path / ".b.old-x1" / "tree"
    old.mkdir(parents=True)
    (old / "build.json").write_text("{}")
    (tmp_path / ".b.tmp-y2").mkdir()
    remove_stale(out)
    assert (out / "build.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


# -- finding 10: report input errors --------------------------------------------------------


@pytest.fixture
def results(plain_build: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results"
    run = nabench("eval", str(plain_build), "--backend", "reference", "--model", "oracle",
                  "--config", "original", "--out", str(out), "--quiet")  # fmt: skip
    assert run.code == 0, run.stderr
    return out


def _parquet(results: Path) -> Path:
    return next(results.glob("*/original.parquet"))


def _corrupt(path: Path) -> None:
    path.write_bytes(b"PAR1" + os.urandom(200) + b"PAR1")


def _drop_score(path: Path) -> None:
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["score"]), path)


def _nan_score(path: Path) -> None:
    table = pq.read_table(path)
    i = table.schema.get_field_index("score")
    scores = [float("nan"), *table.column("score").to_pylist()[1:]]
    pq.write_table(table.set_column(i, "score", pa.array(scores, pa.float64())), path)


def _null_outcome(path: Path, column: str = "invalid") -> None:
    """A missing `invalid` (or `correct`) cell: the configs table counted it out of the
    invalid rate, the headline as valid (0.5 vs 0.25 of four rows), a missing `correct` was
    an internal error."""
    table = pq.read_table(path)
    values = [None, *table.column(column).to_pylist()[1:]]
    i = table.schema.get_field_index(column)
    pq.write_table(table.set_column(i, column, pa.array(values, pa.bool_())), path)


def _other_dataset(path: Path) -> None:
    """ARC's ids under the MMLU build's name: a run of another dataset."""
    table = pq.read_table(path)
    ids = pa.array([f"arc_challenge/test/Mercury_{k}" for k in range(table.num_rows)])
    for name in ("id", "source_id"):
        table = table.set_column(table.schema.get_field_index(name), name, ids)
    pq.write_table(table, path)


def _bomb(path: Path) -> None:
    """Each raw output one 30 MB string, stored once in a zstd dictionary page (a few KB on
    disk, 360 MB decoded): refused before it is decoded."""
    table = pq.read_table(path)
    big = pa.array(["x" * 30_000_000], pa.string())
    col = pa.DictionaryArray.from_arrays(pa.array([0] * table.num_rows, pa.int32()), big)
    i = table.schema.get_field_index("raw_output")
    pq.write_table(table.set_column(i, "raw_output", col), path, compression="zstd")


def _duplicate_row(path: Path) -> None:
    """The first item answered twice (once right, once wrong): the pairing kept one row."""
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), path)


@pytest.mark.parametrize(
    ("edit", "says"),
    [(_corrupt, "cannot read the responses"), (_duplicate_row, "answered more than once"),
     (_bomb, "a decompression bomb?"), (_drop_score, "missing column(s) score"),
     (_nan_score, "NaN"), (_null_outcome, "1 invalid value(s) missing"),
     (functools.partial(_null_outcome, column="correct"), "1 correct value(s) missing"),
     (_other_dataset, "12 of 12 id(s) are not items of the build it records")],
    ids=["corrupt", "duplicate-row", "bomb", "missing-column", "nan-score", "null-invalid",
         "null-correct", "another-dataset"],
)  # fmt: skip
def test_report_names_the_file_and_the_problem(
    results: Path, tmp_path: Path, edit: object, says: str
) -> None:
    parquet = _parquet(results)
    edit(parquet)  # type: ignore[operator]
    run = nabench("report", str(results), "--out", str(tmp_path / "r"), "--no-plots")
    assert run.code != 0
    assert len(run.errors) == 1, run.stderr
    assert str(parquet) in run.errors[0] and says in run.errors[0], run.errors
    assert "internal error" not in run.stderr


def test_report_says_when_a_runs_build_is_not_here(results: Path, tmp_path: Path) -> None:
    """A run whose recorded build was moved away (or is a Hub id) cannot have its ids
    checked against the build's items: the report says so, it does not skip it unsaid."""
    checked = nabench("report", str(results), "--out", str(tmp_path / "r1"), "--no-plots")
    assert checked.code == 0, checked.stderr
    assert not [n for n in _notes(tmp_path / "r1") if "not checked" in n]
    summary = next(results.glob("*/original.summary.json"))
    data = json.loads(summary.read_text())
    summary.write_text(json.dumps({**data, "dataset": str(tmp_path / "moved-away")}))
    run = nabench("report", str(results), "--out", str(tmp_path / "r2"), "--no-plots")
    assert run.code == 0, run.stderr
    (note,) = [n for n in _notes(tmp_path / "r2") if "not checked" in n]
    assert "its build is not here" in note and "moved-away" in note
    assert note.startswith(f"run {summary.parent.name}:")
    assert note in (tmp_path / "r2" / "report.md").read_text()
    # a build that is here but lacks the config: said as such
    summary.write_text(json.dumps({**data, "config": "na_keyed_last"}))
    summary.rename(summary.with_name("na_keyed_last.summary.json"))
    (summary.parent / "original.parquet").rename(summary.parent / "na_keyed_last.parquet")
    run = nabench("report", str(results), "--out", str(tmp_path / "r3"), "--no-plots")
    assert run.code == 0, run.stderr
    (note,) = [n for n in _notes(tmp_path / "r3") if "not checked" in n]
    assert "its build has no na_keyed_last config" in note


def _notes(report: Path) -> list[str]:
    notes: list[str] = json.loads((report / "report.json").read_text())["notes"]
    return notes


def test_report_names_a_malformed_summary(results: Path, tmp_path: Path) -> None:
    summary = next(results.glob("*/original.summary.json"))
    summary.write_text("[" * 10_000)
    run = nabench("report", str(results), "--out", str(tmp_path / "r"), "--no-plots")
    assert run.code != 0 and len(run.errors) == 1, run.stderr
    assert str(summary) in run.errors[0] and "internal error" not in run.stderr


def test_report_refusal_touches_no_results(results: Path, tmp_path: Path) -> None:
    before = tree_bytes(results)
    _nan_score(_parquet(results))
    after_edit = tree_bytes(results)
    nabench("report", str(results), "--out", str(tmp_path / "r"), "--no-plots")
    assert tree_bytes(results) == after_edit != before
    assert not (tmp_path / "r" / "report.md").exists()


def test_report_refuses_runs_of_builds_whose_items_differ(
    plain_build: Path, mmlu_dir: Path, tmp_path: Path
) -> None:
    """Runs of two builds with other seeds answered other na_distractor items under the same
    ids (another distractor replaced): pooled in one panel, KR-20, D and the item browser
    would treat them as one test. The report refuses in one line naming both builds; runs of
    builds whose shared items are equal (another --limit of the same recipe) still report."""
    from safety_helpers import build_args

    reseeded = tmp_path / "reseeded"
    assert nabench(*build_args(mmlu_dir, reseeded, "--labels", "none", "--seed", "7"),
                   "mmlu-na").code == 0  # fmt: skip
    longer = tmp_path / "longer"
    assert nabench(*build_args(mmlu_dir, longer, "--labels", "none", limit=14),
                   "mmlu-na").code == 0  # fmt: skip

    def oracle(build: Path, out: Path) -> Path:
        run = nabench("eval", str(build), "--backend", "reference", "--model", "oracle",
                      "--config", "original", "--config", "na_distractor", "--out", str(out),
                      "--quiet")  # fmt: skip
        assert run.code == 0, run.stderr
        return out

    a = oracle(plain_build, tmp_path / "ra")
    b = oracle(reseeded, tmp_path / "rb")
    run = nabench("report", str(a), str(b), "--out", str(tmp_path / "r"), "--no-plots")
    assert run.code != 0
    assert len(run.errors) == 1, run.stderr
    (line,) = run.errors
    assert "na_distractor" in line and str(plain_build) in line and str(reseeded) in line, line
    assert "internal error" not in run.stderr
    c = oracle(longer, tmp_path / "rc")
    ok = nabench("report", str(a), str(c), "--out", str(tmp_path / "r2"), "--no-plots")
    assert ok.code == 0, ok.stderr


def test_report_refuses_a_run_whose_build_was_rebuilt_in_place_with_other_items(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """Summaries recorded the build's path only: a build rebuilt in place with another seed
    after eval (other na_distractor draws under the same ids) passed the id check, and the
    report paired the run with items it never answered. Each summary now keeps a hash of
    the items it answered; a rebuild with a longer --limit keeps them and still reports."""
    from safety_helpers import build_args

    build, out = tmp_path / "b", tmp_path / "res"
    assert nabench(*build_args(mmlu_dir, build, "--labels", "none"), "mmlu-na").code == 0
    run = nabench("eval", str(build), "--backend", "reference", "--model", "oracle",
                  "--out", str(out), "--quiet")  # fmt: skip
    assert run.code == 0, run.stderr
    longer = build_args(mmlu_dir, build, "--labels", "none", limit=14)
    assert nabench(*longer, "mmlu-na").code == 0
    ok = nabench("report", str(out), "--out", str(tmp_path / "r1"), "--no-plots")
    assert ok.code == 0, ok.stderr
    reseeded = build_args(mmlu_dir, build, "--labels", "none", "--seed", "7")
    assert nabench(*reseeded, "mmlu-na").code == 0
    bad = nabench("report", str(out), "--out", str(tmp_path / "r2"), "--no-plots")
    assert bad.code != 0 and len(bad.errors) == 1, bad.stderr
    assert "was rebuilt after this run answered it" in bad.errors[0], bad.errors
    assert "na_distractor" in bad.errors[0] or "na_mixed" in bad.errors[0], bad.errors


def test_report_reads_runs_of_an_artifacts_build_with_prior_configs(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """An individual-prior config has one build row per option (`<item>#k`) and one answer
    per item (`<item>`): the report refused every such run as "not items of the build it
    records", so no eval of an artifacts build could be reported. Its answers are checked
    against the build's items; another dataset's ids are still refused."""
    from safety_helpers import build_args

    build = tmp_path / "art"
    assert nabench(*build_args(mmlu_dir, build), "mmlu-artifacts").code == 0
    out = tmp_path / "res"
    run = nabench("eval", str(build), "--backend", "reference", "--model", "always-a",
                  "--config", "full", "--config", "prior_choice", "--out", str(out),
                  "--quiet")  # fmt: skip
    assert run.code == 0, run.stderr
    rep = nabench("report", str(out), "--out", str(tmp_path / "r"), "--no-plots")
    assert rep.code == 0, rep.stderr
    configs = json.loads((tmp_path / "r" / "report.json").read_text())["configs"]
    prior = [c for c in configs if c["config"] == "prior_choice"]
    assert len(prior) == 1 and prior[0]["n"] == 12, prior
    parquet = next(out.glob("*/prior_choice.parquet"))
    _other_dataset(parquet)
    bad = nabench("report", str(out), "--out", str(tmp_path / "r2"), "--no-plots")
    assert bad.code != 0 and "not items of the build it records" in bad.errors[0], bad.stderr


# the commands that read a recipe's source (`--source`, `--split`), up to their --out value
SOURCE_COMMANDS = [
    ["build", "mmlu-na", "--labels", "none", "--out"],
    ["build", "mmlu-na-train", "--labels", "none", "--out"],
    ["label", "mmlu-na", "--out"],
]


@pytest.mark.parametrize("command", SOURCE_COMMANDS, ids=["na", "na-train", "label"])
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_source_is_refused_not_read_as_the_recipes_hub_id(
    command: list[str], empty: str, tmp_path: Path
) -> None:
    """`--source "$DATA"` with DATA unset read the recipe's Hub id (a Hub error offline, the
    Hub's rows online) instead of saying the location is missing."""
    out = tmp_path / ("labels.parquet" if command[0] == "label" else "out")
    run = nabench(*command, str(out), "--source", empty, "--limit", "3")
    assert run.code != 0
    assert run.stderr.strip().splitlines() == [
        "error: --source is empty: give a folder, data file or Hub id, or leave it out "
        "for the recipe's own source"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", SOURCE_COMMANDS, ids=["na", "na-train", "label"])
def test_a_split_given_twice_is_refused(command: list[str], mmlu_dir: Path, tmp_path: Path) -> None:
    """`--split validation --split validation` (recipes refuse a repeated split): mmlu-na
    ended in "internal error: ValueError ... staged twice"; na-train sampled every item
    twice and pooled both copies into one set of 2n samples, each DPO pair written twice."""
    out = tmp_path / ("labels.parquet" if command[0] == "label" else "out")
    run = nabench(*command, str(out), "--source", str(mmlu_dir), "--limit", "3",
                  "--split", "validation", "--split", "dev", "--split", "validation")  # fmt: skip
    assert run.code != 0
    assert run.stderr.strip().splitlines() == [
        "error: --split repeat ['validation']: give each split once"
    ]
    assert list(tmp_path.iterdir()) == []
