"""The selfknow recipe and pipeline end to end on the real SmolLM2 model and the real cache.

SmolLM2-135M often writes off-plan or malformed JSON: these tests check mechanics (every slot
accounted for, schemas, staging, report, cache replay), never the content.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from fixtures.scripted import Scripted, chat_body
from scripted_model import openai_model, responder

from nabench.cli import main
from nabench.core.errors import NabenchError, RecipeError, ValidationFailed
from nabench.llm.options import backend_kwargs
from nabench.pipelines import selfknow as selfknow_pipeline
from nabench.pipelines.registry import parse_recipe, run_recipe
from nabench.pipelines.selfknow import CONFIGS, default_cache_path, default_stats_path
from nabench.pipelines.skeleton import BuildOptions
from nabench.selfknow import load_taxonomy
from nabench.selfknow.classify import CLASSIFICATIONS_ARROW
from nabench.selfknow.generate import QUARANTINE_ARROW, QUARANTINE_REASONS, TASKS_ARROW
from nabench.selfknow.recipe import SelfKnowRecipe
from nabench.validate import validate_path
from nabench.validate.croissant import mlcroissant_problem

TAXONOMY = load_taxonomy()

SMALL_RECIPE: dict[str, Any] = {
    "kind": "selfknow",
    "name": "sk-test",
    "version": "0.1.0",
    "seed": 7,
    "generator": {
        "options": {"n_threads": 1},
        "styles": ["vanilla"],
        "n_per_class": 5,
        "temperature": 1.0,
        "max_tokens": 96,
        "max_task_chars": 160,
        "max_analysis_chars": 80,
        "max_attempts": 2,
        "chunk_size": 4,
    },
    "classifier": {
        "temperature": 0.0,
        "max_tokens": 96,
        "max_answer_chars": 100,
        "max_analysis_chars": 80,
        "max_attempts": 2,
        "chunk_size": 4,
    },
    "publish": {"repo_id": "someone/sk-test"},
}


# -- recipe ----------------------------------------------------------------------------------


def test_shipped_recipe_parses_and_dispatches() -> None:
    from nabench.pipelines.registry import KINDS, load_recipe
    from nabench.pipelines.selfknow import build_selfknow

    recipe = load_recipe("selfknow")
    assert isinstance(recipe, SelfKnowRecipe)
    assert recipe.generator.temperature == 1.0 and recipe.classifier.temperature == 0.0
    assert set(recipe.generator.styles) == {"vanilla", "challenge"}
    assert KINDS[recipe.kind].build is build_selfknow


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"version": "1.0"}, "not semantic"),
        ({"surprise": 1}, "surprise"),
        ({"generator": {"styles": ["vanilla", "vanilla"]}}, "repeat"),
        ({"generator": {"styles": ["loud"]}}, "styles"),
        ({"generator": {"n_per_class": 0}}, "n_per_class"),
        ({"generator": {"backend": "magic"}}, "backend"),
        ({"classifier": {"model": "other.gguf"}}, "same_as_generator"),
        ({"classifier": {"style": "whisper"}}, "style"),
    ],
)
def test_recipe_rejects(patch: dict[str, Any], message: str) -> None:
    data = {"kind": "selfknow", "name": "x", "version": "1.0.0", **patch}
    with pytest.raises(RecipeError, match=message):
        parse_recipe(data, "test.yaml")


def test_recipe_cross_model_classifier() -> None:
    recipe = parse_recipe(
        {
            "kind": "selfknow",
            "name": "x",
            "version": "1.0.0",
            "generator": {"backend": "local"},
            "classifier": {
                "same_as_generator": False,
                "backend": "openai",
                "model": "judge",
                "base_url": "http://127.0.0.1:9/v1",
            },
        },
        "x.yaml",
    )
    spec = recipe.classifier_model()
    assert spec.backend == "openai"
    assert backend_kwargs(spec.backend, spec.model, spec.base_url, spec.concurrency) == {
        "model": "judge",
        "base_url": "http://127.0.0.1:9/v1",
        "concurrency": 8,
    }
    assert not spec.same_model_as(recipe.generator)
    same = parse_recipe({"kind": "selfknow", "name": "x", "version": "1.0.0"}, "x.yaml")
    assert same.classifier_model().same_model_as(same.generator)


# -- end to end ------------------------------------------------------------------------------


def _load(out: Path, config: str) -> Any:
    import datasets

    return datasets.load_dataset(str(out), config, split="test")


def _check_output(out: Path, slots: int, styles: list[str]) -> dict[str, Any]:
    tasks = pq.read_table(out / "tasks" / "test-00000-of-00001.parquet")
    quarantine = pq.read_table(out / "quarantine" / "test-00000-of-00001.parquet")
    verdicts = pq.read_table(out / "classifications" / "test-00000-of-00001.parquet")
    assert tasks.schema.remove_metadata().equals(TASKS_ARROW)
    assert quarantine.schema.remove_metadata().equals(QUARANTINE_ARROW)
    assert verdicts.schema.remove_metadata().equals(CLASSIFICATIONS_ARROW)
    ids = tasks.column("task_id").to_pylist() + quarantine.column("task_id").to_pylist()
    assert len(ids) == len(set(ids)) == slots
    assert sorted(verdicts.column("task_id").to_pylist()) == sorted(
        tasks.column("task_id").to_pylist()
    )
    assert set(tasks.column("prompt_style").to_pylist()) <= set(styles)
    assert set(quarantine.column("quarantine_reason").to_pylist()) <= set(QUARANTINE_REASONS)
    for config, table in (
        ("tasks", tasks),
        ("quarantine", quarantine),
        ("classifications", verdicts),
    ):
        loaded = _load(out, config)
        assert loaded.num_rows == table.num_rows
        assert set(loaded.column_names) == set(table.column_names)
    readme = (out / "README.md").read_text()
    front = yaml.safe_load(readme.split("---")[1])
    assert {c["config_name"] for c in front["configs"]} == {
        "tasks",
        "quarantine",
        "classifications",
    }
    assert "Self-knowledge metrics" in readme and "quarantine reason" in readme
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["counts"]["tasks"]["test"] == tasks.num_rows
    assert manifest["generation"]["slots"] == slots
    report = out / "report"
    assert (report / "report.md").is_file()
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["quality"]["total_rows"] == verdicts.num_rows
    assert metrics["n"] + metrics["quality"]["invalid_rows"] == verdicts.num_rows
    assert len(list(report.glob("type_*.png"))) >= len(TAXONOMY.types)
    if len(styles) > 1:
        for style in styles:
            assert (report / style / "report.md").is_file()
    # report/ is part of the staged tree: every file hashed in build.json (publish needs it)
    tree = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(manifest["files"]) == tree - {"build.json"}
    assert {f for f in tree if f.startswith("report/")} >= {"report/report.md"}
    # croissant.json: valid for mlcroissant, one record set per config, the model named
    assert mlcroissant_problem(out / "croissant.json") is None
    croissant = json.loads((out / "croissant.json").read_text())
    assert {rs["@id"] for rs in croissant["recordSet"]} == {f"{c}/test" for c in manifest["counts"]}
    assert manifest["generator_model"] in croissant["rai:dataCollection"]
    assert validate_path(out).violations == []
    # side files are named relative to the output, never by an absolute local path
    text = (out / "build.json").read_text() + readme
    assert str(out.parent) not in text and not Path(manifest["cache"]).is_absolute()
    return manifest


@pytest.mark.slow
def test_build_small_recipe_end_to_end_and_cached_rerun(tmp_path: Path, llama_cpp: Any) -> None:
    recipe = parse_recipe(SMALL_RECIPE, "small")
    out = tmp_path / "sk"
    result = run_recipe(recipe, BuildOptions(out=out, progress=False))
    slots = 2 * SMALL_RECIPE["generator"]["n_per_class"]
    manifest = _check_output(out, slots, ["vanilla"])
    assert result.out == out
    assert result.exclusions["total"] == result.counts["quarantine"]["test"]
    assert sum(result.exclusions["by_reason"].values()) == result.exclusions["total"]
    assert result.counts["tasks"]["test"] + result.exclusions["total"] == slots
    assert set(result.timings) == {"generate", "classify", "score", "report", "validate", "stage"}

    stats = json.loads(default_stats_path(out).read_text())
    gen = stats["extra"]["generation"]
    assert gen["total"] == slots and gen["calls"] >= slots and gen["cache_hits"] == 0
    assert gen["extra"]["valid"] + gen["extra"]["invalid"] == slots
    cls = stats["extra"]["classification"]
    assert cls["total"] == result.counts["classifications"]["test"]
    assert stats["calls"] == gen["calls"] + cls["calls"]
    assert (
        manifest["classification"]["valid"] + manifest["classification"]["invalid"]
        == (cls["total"])
    )
    assert default_cache_path(out).is_file()
    first = {p.name: p.read_bytes() for p in (out / "tasks").glob("*.parquet")}
    first_verdicts = (out / "classifications" / "test-00000-of-00001.parquet").read_bytes()

    # a second run replays everything from the cache: zero model calls, same bytes
    run_recipe(recipe, BuildOptions(out=out, progress=False))
    again = json.loads(default_stats_path(out).read_text())
    assert again["calls"] == 0
    assert again["cache_hits"] == stats["calls"]
    assert {p.name: p.read_bytes() for p in (out / "tasks").glob("*.parquet")} == first
    assert (out / "classifications" / "test-00000-of-00001.parquet").read_bytes() == first_verdicts

    # the classifications table is scored by `nabench selfknow metrics` as it is
    cli = CliRunner().invoke(
        main,
        ["selfknow", "metrics", str(out / "classifications" / "test-00000-of-00001.parquet"),
         "--json"],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    scored = json.loads(cli.output)
    assert scored == json.loads((out / "report" / "metrics.json").read_text())


def test_build_validates_before_writing_a_manifest(
    tmp_path: Path, scripted_server: Callable[..., Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A selfknow build runs the validator `nabench validate` runs, before its manifest is
    written: a classification of a task the build does not have stops the build, and the
    previous build in the folder is left as it was. (Pipeline logic: a scripted model.)"""
    server = scripted_server(responder())
    recipe = parse_recipe(openai_model(SMALL_RECIPE, server.url), "small")
    out = tmp_path / "sk"
    run_recipe(recipe, BuildOptions(out=out, progress=False))
    before = (out / "build.json").read_bytes()
    real = selfknow_pipeline.tables_of

    def tampered(run: Any) -> dict[str, pa.Table]:
        tables = real(run)
        verdicts = tables["classifications"]
        ids = verdicts.column("task_id").to_pylist()
        ids[0] = "no-such-task"
        i = verdicts.column_names.index("task_id")
        field = verdicts.schema.field("task_id")
        tables["classifications"] = verdicts.set_column(i, field, pa.array(ids, field.type))
        return tables

    monkeypatch.setattr(selfknow_pipeline, "tables_of", tampered)
    posts = len(server.posts)
    with pytest.raises(ValidationFailed, match="classified_task_known"):
        run_recipe(recipe, BuildOptions(out=out, progress=False))  # replayed from the cache
    assert (out / "build.json").read_bytes() == before
    assert len(server.posts) == posts


def test_build_with_no_scorable_classification_is_refused(
    tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    """Every classification unparsed (no JSON after every attempt): the build published
    metrics of nothing (n 0, every score undefined) and exited 0. It now stops with the
    verdict `nabench selfknow metrics` gives that table, and `out` is not written."""
    tasks_only = responder()

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        if "write short test tasks" in body["messages"][0]["content"]:
            return tasks_only(path, body, n)
        return 200, chat_body("I will not answer in JSON.")

    server = scripted_server(respond)
    recipe = parse_recipe(openai_model(SMALL_RECIPE, server.url), "small")
    out = tmp_path / "sk"
    with pytest.raises(NabenchError, match="none of its 10 row") as refused:
        run_recipe(recipe, BuildOptions(out=out, progress=False))
    assert "nothing to score" in str(refused.value) and "\n" not in str(refused.value)
    assert not out.exists()


def test_build_refuses_a_cache_inside_its_out(
    tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    """`--cache OUT/cache.sqlite` (or `--cache OUT`): the cache was created inside the folder
    the build then swapped in, so it was deleted, every model call lost, while build.json
    named it as a file of the build. Refused now, before a model call."""
    server = scripted_server(responder())
    recipe = parse_recipe(openai_model(SMALL_RECIPE, server.url), "small")
    out = tmp_path / "sk"
    for cache in (out / "cache.sqlite", out, out / "sub" / "c.sqlite"):
        with pytest.raises(NabenchError, match="--cache"):
            run_recipe(recipe, BuildOptions(out=out, cache=cache, progress=False))
        assert not out.exists() and not server.posts


def test_nabench_build_selfknow_limit_push_and_load_back(
    tmp_path: Path, scripted_server: Callable[..., Scripted]
) -> None:
    """The shipped recipe through `nabench build --push` and back (publishing mechanics: the
    model is the scripted one on loopback; the real SmolLM2 run is the test above)."""
    import datasets

    out = tmp_path / "build"
    cache = tmp_path / "elsewhere" / "responses.sqlite"
    repo = tmp_path / "release.git"
    server = scripted_server(responder())
    model = [
        "--set", "generator.backend=openai", "--set", f"generator.base_url={server.url}",
        "--set", "generator.model=scripted-model", "--set", "generator.options={}",
    ]  # fmt: skip
    result = CliRunner().invoke(
        main,
        ["build", "selfknow", "--limit", "2", "--out", str(out), "--cache", str(cache), *model,
         "--quiet", "--push", "--to", f"git:{repo}", "--repo-id", "org/selfknow"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert cache.is_file() and not default_cache_path(out).exists()
    assert f"wrote {out}" in result.output and "excluded:" in result.output
    manifest = _check_output(out, 2 * 2 * 2, ["vanilla", "challenge"])
    assert manifest["n_per_class"] == 2 and manifest["limit"] == 2
    assert manifest["generator_model"] == "scripted-model" and server.posts
    # outside the build: named, not located (no path of the building machine is published)
    assert manifest["cache"] == "local:responses.sqlite"
    assert manifest["stats"] == "local:build.stats.json"
    assert json.loads(default_stats_path(out).read_text())["calls"] > 0

    # the release: tagged in the git repo, and it loads back from a clone of the tag
    version = manifest["recipe"]["version"]
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--branch", f"v{version}", str(repo), str(clone)],
        check=True,
        capture_output=True,
    )
    assert (clone / "report" / "report.md").read_bytes() == (out / "report/report.md").read_bytes()
    for config in CONFIGS:
        loaded = datasets.load_dataset(str(clone), config, split="test")
        assert loaded.num_rows == manifest["counts"][config]["test"]

    # `nabench validate` knows the kind: the build passes; an edited report file does not
    ok = CliRunner().invoke(main, ["validate", str(out)])
    assert ok.exit_code == 0 and "0 violations" in ok.output, ok.output
    (out / "report" / "report.md").write_text("edited", encoding="utf-8")
    bad = CliRunner().invoke(main, ["validate", str(out)])
    assert bad.exit_code == 1 and "report/report.md" in bad.output, bad.output


@pytest.mark.slow
def test_cli_generate_classify_metrics_cross_model(tmp_path: Path, llama_cpp: Any) -> None:
    runner = CliRunner()
    tasks = tmp_path / "tasks.parquet"
    common = ["--option", "n_threads=1", "--max-tokens", "96", "--cache", str(tmp_path / "c.db")]
    gen = runner.invoke(
        main,
        ["selfknow", "generate", *common, "--n-per-class", "2", "--style", "vanilla",
         "--seed", "3", "--temperature", "1.0", "--max-task-chars", "160", "--out", str(tasks),
         "--quiet"],
    )  # fmt: skip
    assert gen.exit_code == 0, gen.output
    quarantine = pq.read_table(tmp_path / "tasks.quarantine.parquet")
    kept = pq.read_table(tasks)
    assert kept.num_rows + quarantine.num_rows == 4
    gen_stats = json.loads((tmp_path / "tasks.stats.json").read_text())
    assert gen_stats["total"] == 4 and gen_stats["calls"] >= 4

    verdicts = tmp_path / "verdicts.parquet"
    # the same GGUF under another model id stands in for a second model: cross-model path
    cls = runner.invoke(
        main,
        ["selfknow", "classify", str(tasks), *common, "--option", "model_id=judge",
         "--max-answer-chars", "100", "--out", str(verdicts), "--quiet"],
    )  # fmt: skip
    assert cls.exit_code == 0, cls.output
    table = pq.read_table(verdicts).to_pandas()
    assert len(table) == kept.num_rows
    assert (table["classifier_model"] == "judge").all() and table["cross_model"].all()
    cls_stats = json.loads((tmp_path / "verdicts.stats.json").read_text())
    assert cls_stats["total"] == kept.num_rows

    rerun = runner.invoke(
        main, ["selfknow", "classify", str(tasks), *common, "--option", "model_id=judge",
               "--max-answer-chars", "100", "--out", str(verdicts), "--quiet"],
    )  # fmt: skip
    assert rerun.exit_code == 0 and "model calls 0" in rerun.output

    metrics = runner.invoke(
        main, ["selfknow", "metrics", str(verdicts), "--out", str(tmp_path / "report")]
    )
    assert metrics.exit_code == 0, metrics.output
    assert (tmp_path / "report" / "report.md").is_file()


def test_cli_bad_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["selfknow", "generate", "--option", "oops", "--out", str(tmp_path / "t.parquet")]
    )
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
