"""lm-eval tasks in every build: files, card, manifest, the harness's own rendering of them,
the generative twin's filter, `lm-eval validate`, `nabench export lm-eval`, release pinning."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.publish.plan import make_plan

GROUP = "nabench_mmlu_na"
MC_CONFIGS = (
    "original",
    "na_keyed",
    "na_keyed__answer_not_found",
    "na_keyed__no_valid_options",
    "na_keyed__none_of_the_options_given_is_correct",
    "na_distractor",
    "na_mixed",
    "all_of_the_above",
)


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


# The shipped recipe's own version (data, read independently of the build code).
RECIPE_VERSION = _yaml(Path(__file__).parents[2] / "nabench/recipes/mmlu-na.yaml")["version"]


def test_every_mc_config_gets_a_task_listed_in_manifest_and_card(mmlu_na: Path) -> None:
    tasks = mmlu_na / "lm_eval"
    manifest = json.loads((mmlu_na / "build.json").read_text())
    for config in MC_CONFIGS:
        task = _yaml(tasks / f"{GROUP}_{config}.yaml")
        assert task["task"] == f"{GROUP}_{config}"
        assert task["metadata"]["nabench_config"] == config
        assert task["metadata"]["version"] == manifest["recipe"]["version"] == RECIPE_VERSION
        data = Path(task["dataset_kwargs"]["data_files"]["test"])  # no path of this machine
        assert not data.is_absolute() and data == Path(config, "test-00000-of-00001.parquet")
        assert (
            _yaml(tasks / f"{GROUP}_{config}_gen.yaml")["include"] == "_nabench_gen_template_yaml"
        )
    assert not (tasks / f"{GROUP}_excluded.yaml").exists()  # the quarantine is no task
    assert _yaml(tasks / f"_{GROUP}.yaml")["task"] == [f"{GROUP}_{c}" for c in MC_CONFIGS]
    template = _yaml(tasks / "_nabench_template_yaml")
    assert template["output_type"] == "multiple_choice"
    assert template["doc_to_target"] == "answer"
    assert template["metric_list"][0]["metric"] == "acc"
    listed = {p for p in manifest["files"] if p.startswith("lm_eval/")}
    assert listed == {f"lm_eval/{p.name}" for p in tasks.iterdir()}
    for rel in listed:
        assert hashlib.sha256((mmlu_na / rel).read_bytes()).hexdigest() == manifest["files"][rel]
    assert manifest["lm_eval"]["group"] == GROUP
    card = (mmlu_na / "README.md").read_text()
    assert f"--tasks {GROUP}" in card and f"`{GROUP}_na_keyed`" in card


def test_the_harness_renders_the_mmlu_layout_for_four_and_five_options(
    mmlu_na: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lm_eval.tasks import TaskManager

    monkeypatch.chdir(mmlu_na)  # the build's own tasks run from the build folder (its card)

    # the build's tasks alone (indexing lm-eval's own takes ~15 s); the lm-eval CLI tests
    # (test_external_results, test_lm_eval_validate_finds_both_groups) load them too
    tm = TaskManager(include_path=str(mmlu_na / "lm_eval"), include_defaults=False)
    loaded = tm.load(GROUP)
    assert loaded["group_map"][GROUP] == [f"{GROUP}_{c}" for c in MC_CONFIGS]
    names = [f"{GROUP}_original", f"{GROUP}_all_of_the_above"]
    tasks = loaded["tasks"]
    for name, letters in zip(names, ("ABCD", "ABCDE"), strict=True):
        config = name.removeprefix(f"{GROUP}_")
        rows = pq.read_table(mmlu_na / config / "test-00000-of-00001.parquet").to_pylist()
        task = tasks[name]
        docs = list(task.test_docs())
        assert len(docs) == len(rows) and docs[0]["id"] == rows[0]["id"]
        for doc, row in zip(docs[:5], rows[:5], strict=True):
            lines = [row["question"].strip()]
            lines += [f"{letter}. {c}" for letter, c in zip(letters, row["choices"], strict=True)]
            assert task.doc_to_text(doc) == "\n".join(lines) + "\nAnswer:"
            assert task.doc_to_choice(doc) == list(letters)
            assert task.doc_to_target(doc) == row["answer"]
        assert rows[0]["choices"][-1] == "All of the above" or letters == "ABCD"


def test_generative_twin_filter_reads_the_first_option_letter(mmlu_na: Path) -> None:
    from lm_eval.filters.extraction import RegexFilter

    gen = _yaml(mmlu_na / "lm_eval" / "_nabench_gen_template_yaml")
    assert gen["output_type"] == "generate_until"
    step = gen["filter_list"][0]["filter"][0]
    f = RegexFilter(regex_pattern=step["regex_pattern"], fallback=step["fallback"])
    outs = [" B", "C. Paris", "(D)", "The answer is A.", "I think E\nbecause", "A cat", ""]
    got = [r[0] for r in f.apply([[o] for o in outs], [{}] * len(outs))]
    assert got == ["B", "C", "D", "A", "E", "[invalid]", "[invalid]"]


def test_lm_eval_validate_finds_both_groups(arc_na: Path) -> None:
    group = "nabench_arc_na"
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "validate", "--tasks", f"{group},{group}_gen",
         "--include_path", str(arc_na / "lm_eval")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All tasks found and valid" in proc.stdout


def test_export_cli_writes_the_same_tasks_and_refuses_bad_input(
    mmlu_na: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["export", "lm-eval", str(mmlu_na), "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    assert f"group {GROUP} (8 task(s))" in res.output
    exported = {p.name: _yaml(p) for p in (tmp_path / "t").iterdir()}
    built = {p.name: _yaml(p) for p in (mmlu_na / "lm_eval").iterdir()}
    assert exported.keys() == built.keys()
    for name, task in built.items():  # the same tasks, reading the build by absolute path
        files = (task.get("dataset_kwargs") or {}).get("data_files")
        if files:
            task["dataset_kwargs"]["data_files"] = {
                s: str(mmlu_na.resolve() / f) for s, f in files.items()
            }
        assert exported[name] == task, name
    bad = runner.invoke(main, ["export", "lm-eval", str(tmp_path / "nope"), "--out", "x"])
    assert bad.exit_code != 0 and f"{str(tmp_path / 'nope')!r} does not exist here" in bad.output
    rev = runner.invoke(main, ["export", "lm-eval", str(mmlu_na), "--revision", "v1", "--out", "x"])
    assert rev.exit_code != 0 and "--revision applies to a Hub id" in rev.output


def test_export_reads_a_home_relative_build_folder(
    mmlu_na: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quoted `~/build` (the shell did not expand it) is the folder under home, as every
    other command reads it: export asked the Hub for the repo id '~/build'."""
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(mmlu_na, tmp_path / "build")
    res = CliRunner().invoke(main, ["export", "lm-eval", "~/build", "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    assert f"group {GROUP} (8 task(s))" in res.output


def test_a_release_pins_its_tasks_to_the_tag(mmlu_na: Path) -> None:
    plan = make_plan(mmlu_na, "org/mmlu-na", version="1.2.0")
    files = {f.path: f for f in plan.adds}
    task = yaml.safe_load(files[f"lm_eval/{GROUP}_na_keyed.yaml"].content)
    assert task["dataset_path"] == "org/mmlu-na"
    assert task["dataset_name"] == "na_keyed"
    assert task["dataset_kwargs"] == {"revision": "v1.2.0"}
    assert "data_files" not in json.dumps(task)
    manifest = json.loads(files["build.json"].content)
    for path, f in files.items():
        if path.startswith("lm_eval/"):  # the card is sealed (core.card_seal), hashed apart
            assert manifest["files"][path] == f.sha256, path


def test_export_of_a_hub_id_pins_the_release_its_own_tasks_read(
    mmlu_na: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`publish --version 3.1.1` of a build whose recipe says 3.1.0 (a republish: tags are
    immutable) tags v3.1.1, but `export lm-eval ORG/NAME` pinned its tasks to v3.1.0, the
    earlier release's rows. The default is now the tag the repo's own tasks read."""
    import huggingface_hub

    plan = make_plan(mmlu_na, "org/mmlu-na", version="9.9.9")  # apart from RECIPE_VERSION
    hub = {f.path: f.content for f in plan.adds}  # the repo's main after that release

    def download(repo_id: str, filename: str, **kw: object) -> str:
        assert repo_id == "org/mmlu-na" and kw.get("revision") is None
        path = tmp_path / "hub" / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(hub[filename])
        return str(path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    out = tmp_path / "t"
    res = CliRunner().invoke(main, ["export", "lm-eval", "org/mmlu-na", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "data org/mmlu-na@v9.9.9" in res.output
    for config in MC_CONFIGS:
        task = _yaml(out / f"{GROUP}_{config}.yaml")
        assert task["dataset_kwargs"] == {"revision": "v9.9.9"}


@pytest.mark.parametrize(
    ("configs", "says"),
    [(5, "is not a mapping"), ({"original": 5}, "is not a list of splits"),
     ({"original": "test"}, "is not a list of splits"),
     ({"original": ["dev"]}, "names dev, not a config and split")],
    ids=["number", "config-number", "split-string", "unbuilt-split"],
)  # fmt: skip
def test_export_refuses_a_hostile_lm_eval_section(
    mmlu_na: Path, tmp_path: Path, configs: object, says: str
) -> None:
    """`lm_eval.configs: 5` ended in an internal error; `{"original": "test"}` wrote tasks with
    `test_split: t` (the split name read letter by letter)."""
    import shutil

    build = tmp_path / "build"
    shutil.copytree(mmlu_na, build)
    manifest = json.loads((build / "build.json").read_text())
    manifest["lm_eval"]["configs"] = configs
    (build / "build.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(main, ["export", "lm-eval", str(build), "--out", str(tmp_path / "t")])
    assert res.exit_code != 0 and "internal error" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and says in res.output, res.output
    assert not (tmp_path / "t").exists()
