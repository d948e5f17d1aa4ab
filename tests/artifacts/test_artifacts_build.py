"""Full builds of `mmlu-artifacts` and `arc-artifacts` from the real data: configs, counts,
offline loading with `datasets`, `nabench validate`, and byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nabench.core.card_seal import unsealed
from nabench.core.errors import NabenchError
from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.registry import load_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.validate import validate_path
from nabench.validate.croissant import mlcroissant_problem

PROMPT_CONFIGS = (
    "full",
    "choices_only",
    "mem_no_choices",
    "mem_gold_choices",
    "mem_empty_choices",
    "prior_choice",
    "prior_choice_with_question",
    "qi_step1",
)


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _load_offline(out: Path, split: str, configs: tuple[str, ...]) -> dict[str, list[str]]:
    code = (
        "import datasets, json, sys\n"
        "out = {}\n"
        "for c in sys.argv[3:]:\n"
        "    ds = datasets.load_dataset(sys.argv[1], c, split=sys.argv[2])\n"
        "    out[c] = [ds.num_rows, *ds.column_names[:4], ds[0]['prompt'][-7:]]\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out), split, *configs],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    loaded: dict[str, list[str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def _validate_cli(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nabench.cli", "validate", str(out)],
        capture_output=True,
        text=True,
    )


def test_mmlu_build_counts_and_manifest(mmlu_build: BuildResult) -> None:
    counts = mmlu_build.counts
    n = counts["full"]["test"]
    assert n + counts["excluded"]["test"] == 14042
    assert mmlu_build.exclusions["by_reason"] == {"duplicate_choices": 9}
    for config in PROMPT_CONFIGS:
        expected = 4 * n if config.startswith("prior") else n
        assert counts[config]["test"] == expected
    assert counts["fewshot"]["dev"] == 285
    manifest = json.loads((mmlu_build.out / "build.json").read_text())
    assert manifest["kind"] == "artifacts"
    assert manifest["fewshot"]["protocol"] == "same_subject"
    assert manifest["fewshot"]["groups"] == {"test": 57}
    assert manifest["validation"]["violations"] == 0
    for rel, digest in manifest["files"].items():
        data = (mmlu_build.out / rel).read_bytes()
        if rel == "README.md":  # hashed without its seal line (the digest of build.json)
            data = unsealed(data.decode()).encode()
        assert hashlib.sha256(data).hexdigest() == digest
    card = (mmlu_build.out / "README.md").read_text()
    assert "## Few-shot protocol" in card and "`choices_only`" in card
    assert "Artifacts or Abduction" in card


def test_mmlu_configs_load_offline_with_datasets(mmlu_build: BuildResult) -> None:
    loaded = _load_offline(mmlu_build.out, "test", PROMPT_CONFIGS)
    for config in PROMPT_CONFIGS:
        rows, *columns, tail = loaded[config]
        assert rows == mmlu_build.counts[config]["test"]
        assert columns == ["id", "item_id", "prompt_type", "prompt"]
        assert tail == ("Question:" if config == "qi_step1" else "Answer:")[-7:]


def test_mmlu_build_passes_nabench_validate(mmlu_build: BuildResult) -> None:
    proc = _validate_cli(mmlu_build.out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0 violations" in proc.stdout
    # its croissant.json (every kind writes one) is listed, hashed and valid for mlcroissant
    manifest = json.loads((mmlu_build.out / "build.json").read_text())
    assert "croissant.json" in manifest["files"]
    assert mlcroissant_problem(mmlu_build.out / "croissant.json") is None


def test_mmlu_few_shot_examples_are_the_subject_dev_examples(mmlu_build: BuildResult) -> None:
    table = pq.read_table(mmlu_build.out / "full" / "test-00000-of-00001.parquet")
    fewshot = pq.read_table(mmlu_build.out / "fewshot" / "dev-00000-of-00001.parquet")
    subject_of = dict(
        zip(fewshot.column("id").to_pylist(), fewshot.column("subject").to_pylist(), strict=True)
    )
    for subject, shots in zip(
        table.column("subject").to_pylist()[::500],
        table.column("fewshot_ids").to_pylist()[::500],
        strict=True,
    ):
        assert len(shots) == 5 and {subject_of[s] for s in shots} == {subject}


def test_arc_build_loads_validates_and_uses_25_train_examples(arc_build: BuildResult) -> None:
    counts = arc_build.counts
    assert counts["full"]["test"] + counts["excluded"]["test"] == 1172
    assert arc_build.exclusions["by_reason"] == {"not_four_choices": 7}
    assert counts["fewshot"]["train"] == 25
    loaded = _load_offline(arc_build.out, "test", PROMPT_CONFIGS)
    assert {c: v[0] for c, v in loaded.items()} == {c: counts[c]["test"] for c in PROMPT_CONFIGS}
    proc = _validate_cli(arc_build.out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = pq.read_table(arc_build.out / "choices_only" / "test-00000-of-00001.parquet")
    shots = table.column("fewshot_ids").to_pylist()
    assert all(len(s) == 25 and s == shots[0] for s in shots)
    assert all(s.startswith("arc_challenge/train/") for s in shots[0])


def test_same_seed_rebuilds_byte_identical(
    arc_build: BuildResult, arc_dir: Path, tmp_path: Path
) -> None:
    again = run_recipe(
        load_recipe("arc-artifacts"),
        BuildOptions(source=str(arc_dir), out=tmp_path / "again", progress=False),
    )
    assert _hashes(again.out) == _hashes(arc_build.out)
    other = build_artifacts(
        load_recipe("arc-artifacts"),
        BuildOptions(source=str(arc_dir), out=tmp_path / "other", seed=1, progress=False),
    )
    a = pq.read_table(arc_build.out / "full" / "test-00000-of-00001.parquet")
    b = pq.read_table(other.out / "full" / "test-00000-of-00001.parquet")
    assert a.column("fewshot_ids")[0] != b.column("fewshot_ids")[0]


def test_limit_and_strict(arc_dir: Path, tmp_path: Path) -> None:
    recipe = load_recipe("arc-artifacts")
    small = build_artifacts(
        recipe, BuildOptions(source=str(arc_dir), out=tmp_path / "s", limit=30, progress=False)
    )
    assert small.counts["full"]["test"] + small.counts["excluded"]["test"] == 30
    assert validate_path(small.out).violations == []
    # --strict refuses malformed rows only (not_four_choices is not a data defect)
    build_artifacts(
        recipe, BuildOptions(source=str(arc_dir), out=tmp_path / "t", strict=True, progress=False)
    )
    mmlu = load_recipe("mmlu-artifacts")
    with pytest.raises(NabenchError, match="--strict"):
        build_artifacts(
            mmlu,
            BuildOptions(
                source=str(Path(arc_dir).parent / "cais__mmlu"),
                out=tmp_path / "m",
                strict=True,
                progress=False,
            ),
        )


def _blank_questions(mmlu_dir: Path, dest: Path, rows: dict[str, tuple[int, ...]]) -> Path:
    """A copy of the real MMLU source whose `rows[split]` questions are blank ("", spaces, a
    newline)."""
    (dest / "all").mkdir(parents=True)
    (dest / "README.md").write_bytes((mmlu_dir / "README.md").read_bytes())
    for path in sorted((mmlu_dir / "all").glob("*.parquet")):
        table = pq.read_table(path)
        questions = table.column("question").to_pylist()
        for n, row in enumerate(rows.get(path.name.split("-")[0], ())):
            questions[row] = ("", "   ", " \n")[n % 3]
        i = table.schema.get_field_index("question")
        column = pa.array(questions, pa.string())
        pq.write_table(table.set_column(i, "question", column), dest / "all" / path.name)
    return dest


def _configs(out: Path) -> dict[str, list[dict[str, object]]]:
    return {p.parent.name: pq.read_table(p).to_pylist() for p in sorted(out.glob("*/*.parquet"))}


def test_a_blank_question_is_quarantined_where_a_prompt_shows_the_question(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """Items without a question were built into every config (`Question: \nChoices:` in
    `full`, the memorization and question-inference prompts; a dev example the same in every
    5-shot prefix). Where a recipe's prompt shows the question they are excluded as
    `missing_question` (every other row as built from the unedited source); a pool example
    is not usable (MMLU's 5-shot of its subject is then one short, in one line); a
    choices-only recipe keeps both."""
    blank_test = (2, 5, 7)
    recipe = load_recipe("mmlu-artifacts")
    only = recipe.model_copy(update={"prompt_types": ["choices_only", "prior_choice"]})

    def build(recipe_: object, src: Path, name: str) -> dict[str, list[dict[str, object]]]:
        options = BuildOptions(source=str(src), out=tmp_path / name, limit=12, progress=False)
        return _configs(build_artifacts(recipe_, options).out)  # type: ignore[arg-type]

    source = _blank_questions(mmlu_dir, tmp_path / "src", {"test": blank_test})
    blank, plain = build(recipe, source, "blank"), build(recipe, mmlu_dir, "plain")
    ids = {f"mmlu/all/test/{r:05d}" for r in blank_test}
    excluded = {r["id"]: r["reasons"] for r in blank["excluded"]}
    assert {i: excluded.get(i) for i in ids} == {i: ["missing_question"] for i in ids}
    assert [r for r in blank["excluded"] if r["id"] not in ids] == plain["excluded"]
    assert blank["fewshot"] == plain["fewshot"]
    for config in PROMPT_CONFIGS:  # per-choice configs: one row per option, of `item_id`
        rest = [r for r in plain[config] if r.get("item_id", r["id"]) not in ids]
        assert blank[config] == rest, config
    kept = build(only, source, "choices-only")
    assert ids <= {r["id"] for r in kept["choices_only"]}
    assert ids <= {r["item_id"] for r in kept["prior_choice"]}
    assert kept["excluded"] == plain["excluded"]
    kept_plain = build(only, mmlu_dir, "choices-only-plain")["choices_only"]

    def shown(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in r.items() if k != "question"} for r in rows]  # carried only

    assert shown(kept["choices_only"]) == shown(kept_plain)

    no_example = _blank_questions(mmlu_dir, tmp_path / "dev", {"dev": (0,)})  # abstract_algebra
    options = BuildOptions(source=str(no_example), out=tmp_path / "dev-out", limit=12)
    with pytest.raises(NabenchError, match=r"has 4 usable item\(s\) of subject 'abstract_alg"):
        build_artifacts(recipe, replace(options, progress=False))
    assert not (tmp_path / "dev-out").exists()
    assert "mmlu/all/dev/00000" in {r["id"] for r in build(only, no_example, "dev-only")["fewshot"]}
