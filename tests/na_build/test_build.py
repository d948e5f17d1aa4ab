from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.core.card_seal import card_digest, unsealed
from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult

NA_CONFIGS = ("original", "na_keyed", "na_distractor", "all_of_the_above", "excluded")


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.parquet"))
    }


def test_full_mmlu_build_has_every_config_and_counts(mmlu_na_full: BuildResult) -> None:
    counts = mmlu_na_full.counts
    for config in NA_CONFIGS:
        assert config in counts
    n_eligible = counts["original"]["test"]
    assert n_eligible + counts["excluded"]["test"] == 14042
    for config in ("na_keyed", "na_distractor", "all_of_the_above", "na_keyed__answer_not_found"):
        assert counts[config]["test"] == n_eligible
    # Items already carrying none/all options are a few percent, never silently dropped.
    by_reason = mmlu_na_full.exclusions["by_reason"]
    assert set(by_reason) <= {
        "excluded_subject",
        "has_none_option",
        "has_all_option",
        "refers_to_other_options",
        "duplicate_choices",
    }
    # mmlu-na leaves out moral_scenarios (895 test items) as the NA study does.
    assert by_reason["excluded_subject"] == 895
    assert 0.02 < (counts["excluded"]["test"] - 895) / 14042 < 0.08
    manifest = json.loads((mmlu_na_full.out / "build.json").read_text())
    assert manifest["exclusions"]["by_reason"] == by_reason
    for rel, digest in manifest["files"].items():
        data = (mmlu_na_full.out / rel).read_bytes()
        if rel == "README.md":  # the card is hashed without its seal line (the build.json digest)
            assert (
                card_digest(data.decode())
                == hashlib.sha256((mmlu_na_full.out / "build.json").read_bytes()).hexdigest()
            )
            data = unsealed(data.decode()).encode()
        assert hashlib.sha256(data).hexdigest() == digest


def test_each_config_loads_offline_with_datasets(mmlu_na_full: BuildResult) -> None:
    code = (
        "import datasets, json, sys\n"
        "out = {c: datasets.load_dataset(sys.argv[1], c, split='test').num_rows "
        "for c in sys.argv[2:]}\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(mmlu_na_full.out), *NA_CONFIGS],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == {c: mmlu_na_full.counts[c]["test"] for c in NA_CONFIGS}


def test_validate_cli_passes_on_the_build(mmlu_na_full: BuildResult) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nabench.cli", "validate", str(mmlu_na_full.out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 violations" in proc.stdout


def test_rebuild_is_byte_identical_and_limit_is_a_prefix(
    mmlu_na_full: BuildResult, mmlu_dir: Path, tmp_path: Path
) -> None:
    recipe = load_recipe("mmlu-na")
    again = build(
        recipe,
        BuildOptions(source=str(mmlu_dir), out=tmp_path / "again", labels="none", progress=False),
    )
    assert _hashes(again.out) == _hashes(mmlu_na_full.out)
    limited = build(
        recipe,
        BuildOptions(
            source=str(mmlu_dir), out=tmp_path / "lim", labels="none", limit=500, progress=False
        ),
    )
    for config in limited.counts:
        small = pq.read_table(limited.out / config / "test-00000-of-00001.parquet").to_pylist()
        full = pq.read_table(mmlu_na_full.out / config / "test-00000-of-00001.parquet").to_pylist()
        by_id = {row["id"]: row for row in full}
        assert small, config
        assert all(row == by_id[row["id"]] for row in small)
        assert {int(r["id"].rsplit("/", 1)[1]) for r in small} <= set(range(500))


def test_arc_build_keeps_four_choice_items_only(arc_dir: Path, tmp_path: Path) -> None:
    result = build(
        load_recipe("arc-na"),
        BuildOptions(source=str(arc_dir), out=tmp_path / "arc", labels="none", progress=False),
    )
    excluded = pq.read_table(tmp_path / "arc" / "excluded" / "test-00000-of-00001.parquet")
    assert set(excluded.column("reason").to_pylist()) == {"not_four_choices"}
    assert excluded.num_rows == 7
    original = pq.read_table(tmp_path / "arc" / "original" / "test-00000-of-00001.parquet")
    assert {len(c) for c in original.column("choices").to_pylist()} == {4}
    assert result.counts["original"]["test"] == 1172 - 7
    # Digit-keyed rows survive with the key mapped by position.
    raw = {
        r["id"]: r
        for r in pq.read_table(
            arc_dir / "ARC-Challenge" / "test-00000-of-00001.parquet"
        ).to_pylist()
    }
    keyed = pq.read_table(tmp_path / "arc" / "na_keyed" / "test-00000-of-00001.parquet").to_pylist()
    digit = [r for r in keyed if raw[r["id"].split("/")[-1]]["answerKey"].isdigit()]
    assert len(digit) == 21
    for row in digit:
        src = raw[row["id"].split("/")[-1]]
        assert row["answer"] == src["choices"]["label"].index(src["answerKey"])
        assert row["choices"][row["answer"]] == "None of the above"


@pytest.mark.parametrize(
    ("recipe", "fixture", "split", "n"),
    [("hellaswag-na", "hellaswag_dir", "validation", 10), ("gpqa-na", "gpqa_dir", "train", 8)],
)
def test_fixture_recipes_build(
    recipe: str, fixture: str, split: str, n: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = request.getfixturevalue(fixture)
    result = build(
        load_recipe(recipe), BuildOptions(source=str(source), out=tmp_path / "o", progress=False)
    )
    assert result.counts["original"][split] == n
    assert result.counts["na_keyed"][split] == n


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _write_dev_variant(mmlu_dir: Path, tmp_path: Path, mutate: str) -> Path:
    table = pq.read_table(mmlu_dir / "all" / "dev-00000-of-00001.parquet")
    rows = table.to_pylist()
    if mutate == "duplicate":
        rows[3]["choices"][1] = rows[3]["choices"][0]
    elif mutate == "empty":
        rows[3]["choices"][2] = ""
    folder = tmp_path / "src" / "all"
    folder.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=table.schema), folder / "test-00000-of-00001.parquet"
    )
    return tmp_path / "src"


@pytest.mark.parametrize("mutate", ["duplicate", "empty"])
def test_malformed_choices_quarantine_or_fail_strict(
    mmlu_dir: Path, tmp_path: Path, mutate: str
) -> None:
    src = _write_dev_variant(mmlu_dir, tmp_path, mutate)
    code, output = _cli(
        "build",
        "mmlu-na",
        "--source",
        str(src),
        "--labels",
        "none",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert code == 0, output
    reason = {"duplicate": "duplicate_choices", "empty": "empty_choice"}[mutate]
    excluded = pq.read_table(tmp_path / "o" / "excluded" / "test-00000-of-00001.parquet")
    assert (
        reason
        in excluded.column("reasons").to_pylist()[
            excluded.column("id").to_pylist().index("mmlu/all/test/00003")
        ]
    )
    code, output = _cli(
        "build",
        "mmlu-na",
        "--source",
        str(src),
        "--labels",
        "none",
        "--out",
        str(tmp_path / "o2"),
        "--quiet",
        "--strict",
    )
    assert code != 0
    assert f"mmlu/all/test/00003 is malformed ({reason})" in output
    assert "Traceback" not in output
    assert not (tmp_path / "o2").exists()


def test_corrupt_answer_missing_column_and_recipe_typo_fail_cleanly(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    table = pq.read_table(mmlu_dir / "all" / "dev-00000-of-00001.parquet")
    bad = table.set_column(3, "answer", pa.array([9] * table.num_rows, pa.int64()))
    (tmp_path / "bad").mkdir()  # files named for their split: `--source` reads one as it
    pq.write_table(bad, tmp_path / "bad" / "test.parquet")
    code, output = _cli(
        "build",
        "mmlu-na",
        "--source",
        str(tmp_path / "bad" / "test.parquet"),
        "--labels",
        "none",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert code != 0 and "out of range" in output and "Traceback" not in output

    pq.write_table(table.drop(["choices"]), tmp_path / "test.parquet")
    code, output = _cli(
        "build",
        "mmlu-na",
        "--source",
        str(tmp_path / "test.parquet"),
        "--labels",
        "none",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert code != 0 and "missing column(s) 'choices'" in output

    recipe = Path(__file__).resolve().parents[2] / "nabench" / "recipes" / "mmlu-na.yaml"
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        recipe.read_text().replace("na_texts: [None of the above]", "na_txts: [None of the above]")
    )
    code, output = _cli(
        "build", str(typo), "--source", str(mmlu_dir), "--out", str(tmp_path / "o"), "--quiet"
    )
    assert code != 0
    assert "field 'variants.2.na_distractor.na_txts'" in output
    assert not (tmp_path / "o").exists()


def test_validate_names_the_corrupted_row(mmlu_na_full: BuildResult, tmp_path: Path) -> None:
    path = mmlu_na_full.out / "na_keyed" / "test-00000-of-00001.parquet"
    rows = pq.read_table(path).to_pylist()
    rows[42]["answer"] = (rows[42]["answer"] + 1) % 4  # key no longer the NA option
    broken = tmp_path / "na_keyed.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), broken)
    code, output = _cli("validate", str(broken))
    assert code == 1
    assert f"row 43 id={rows[42]['id']}: [na_keyed_key_is_na]" in output  # 1-based

    jsonl = tmp_path / "rows.jsonl"
    rows[42]["answer"] = rows[42]["original_answer"]
    rows[7]["choices"][0] = rows[7]["choices"][1]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows[:50]) + "\n")
    code, output = _cli("validate", str(jsonl))
    assert code == 1
    assert "row 8 " in output and "[choices_distinct]" in output


def test_list_and_schema_export(tmp_path: Path) -> None:
    code, output = _cli("list")
    assert code == 0
    names = [line.split()[0] for line in output.strip().splitlines()]
    assert {"mmlu-na", "arc-na", "hellaswag-na", "gpqa-na"} <= set(names)
    code, output = _cli("schema", "export", "--out", str(tmp_path))
    assert code == 0
    shipped = Path(__file__).resolve().parents[2] / "nabench" / "schemas" / "json"
    for f in shipped.glob("*.schema.json"):
        assert (tmp_path / f.name).read_text() == f.read_text(), f"{f.name} is stale"


def test_validate_flags_ids_missing_from_original(gpqa_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "g"
    build(load_recipe("gpqa-na"), BuildOptions(source=str(gpqa_dir), out=out, progress=False))
    path = out / "na_keyed" / "train-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[2]["id"] = "gpqa/gpqa_main/recNOTINORIGINAL"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    code, output = _cli("validate", str(out))
    assert code == 1
    assert "row 3 id=gpqa/gpqa_main/recNOTINORIGINAL: [id_in_original]" in output


def test_quiet_silences_the_libraries_bars_too(tmp_path: Path, mmlu_dir: Path) -> None:
    """`--quiet` means no progress bars: `datasets`' "Generating test split" bar was still
    drawn on stderr. The bars come back after the command (a later command in the same
    process draws its own)."""
    import datasets

    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--limit", "3", "--labels", "none"]
    loud = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "loud")])
    quiet = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "quiet"), "--quiet"])
    assert loud.exit_code == 0 and quiet.exit_code == 0, (loud.output, quiet.output)
    assert "Generating test split" in loud.stderr
    assert "Generating" not in quiet.stderr and "%|" not in quiet.stderr, quiet.stderr
    assert datasets.is_progress_bar_enabled()
