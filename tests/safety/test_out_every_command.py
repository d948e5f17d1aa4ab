"""Every command that writes a folder refuses an `--out` it must not write into, with one
line and nothing touched (issue 24, finding 1: `export lm-eval --out DIR` deleted DIR)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fixtures.scripted import chat_body
from safety_helpers import nabench, tree_bytes

from nabench.selfknow.generate import TASKS_ARROW

FILE = "test-00000-of-00001.parquet"


def _user_folder(folder: Path) -> dict[str, bytes]:
    (folder / "notes").mkdir(parents=True)
    (folder / "paper.tex").write_text("\\section{Results}\n")
    (folder / "notes" / "todo.md").write_text("- rerun\n")
    return tree_bytes(folder)


def _refused(run_code: int, errors: list[str], stderr: str) -> None:
    assert run_code != 0, stderr
    assert len(errors) == 1 and "--out" in errors[0], stderr
    assert "Traceback" not in stderr


@pytest.fixture
def results(plain_build: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results"
    run = nabench("eval", str(plain_build), "--backend", "reference", "--model", "oracle",
                  "--out", str(out), "--quiet")  # fmt: skip
    assert run.code == 0, run.stderr
    return out


# -- export lm-eval ------------------------------------------------------------------------


def test_export_into_a_user_folder_is_refused(plain_build: Path, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    before = _user_folder(folder)
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(folder))
    _refused(run.code, run.errors, run.stderr)
    assert "not an lm-eval export" in run.errors[0]
    assert tree_bytes(folder) == before


@pytest.mark.parametrize("where", ["build", "parent", "inside"])
def test_export_into_the_build_or_around_it_is_refused(
    plain_build: Path, tmp_path: Path, where: str
) -> None:
    parent = plain_build.parent
    before = tree_bytes(parent)
    out = {"build": plain_build, "parent": parent, "inside": plain_build / "tasks"}[where]
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(out))
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(parent) == before
    assert sorted(p.name for p in parent.iterdir()) == [plain_build.name]


def test_export_through_a_symlink_is_refused(plain_build: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious"
    before = _user_folder(target)
    link = tmp_path / "tasks"
    link.symlink_to(target)
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(link))
    _refused(run.code, run.errors, run.stderr)
    assert "a link" in run.errors[0]
    assert link.is_symlink() and tree_bytes(target) == before


def test_export_replaces_its_own_earlier_export(plain_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    assert nabench("export", "lm-eval", str(plain_build), "--out", str(out)).code == 0
    first = tree_bytes(out)
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(out))
    assert run.code == 0, run.stderr
    assert tree_bytes(out) == first
    (out / "mine.txt").write_text("keep me")
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(out))
    _refused(run.code, run.errors, run.stderr)
    assert (out / "mine.txt").read_text() == "keep me"


def test_export_keeps_a_user_task_that_names_the_nabench_tasks(
    plain_build: Path, tmp_path: Path
) -> None:
    """lm-eval's include_path is where users put their own tasks: one that includes or lists
    the exported tasks says "nabench", and the next export deleted it as one of its own."""
    out = tmp_path / "tasks"
    assert nabench("export", "lm-eval", str(plain_build), "--out", str(out)).code == 0
    task = sorted(p.name for p in out.glob("nabench_*_original.yaml"))[0]
    (out / "my_variant.yaml").write_text(f"include: {task}\ntask: my_variant\nnum_fewshot: 5\n")
    before = tree_bytes(out)
    run = nabench("export", "lm-eval", str(plain_build), "--out", str(out))
    _refused(run.code, run.errors, run.stderr)
    assert "my_variant.yaml" in run.errors[0]
    assert tree_bytes(out) == before


# -- eval ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["project", "build", "link"])
def test_eval_into_a_foreign_folder_is_refused(
    plain_build: Path, tmp_path: Path, where: str
) -> None:
    project = tmp_path / "project"
    before_project = _user_folder(project)
    (tmp_path / "link").symlink_to(project)
    before_build = tree_bytes(plain_build)
    out = {"project": project, "build": plain_build, "link": tmp_path / "link"}[where]
    run = nabench("eval", str(plain_build), "--backend", "reference", "--model", "oracle",
                  "--out", str(out), "--quiet")  # fmt: skip
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(project) == before_project
    assert tree_bytes(plain_build) == before_build


def test_eval_into_a_run_folder_of_user_files_is_refused(plain_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    before = _user_folder(out / "mine")
    run = nabench("eval", str(plain_build), "--backend", "reference", "--model", "oracle",
                  "--out", str(out), "--run-name", "mine", "--quiet")  # fmt: skip
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(out / "mine") == before


def test_eval_adds_runs_beside_logs_in_a_results_folder(results: Path, plain_build: Path) -> None:
    (results / "lm-eval").mkdir()
    (results / "lm-eval" / "samples.jsonl").write_text("{}\n")
    run = nabench("eval", str(plain_build), "--backend", "reference", "--model", "always-a",
                  "--out", str(results), "--quiet")  # fmt: skip
    assert run.code == 0, run.stderr
    runs = sorted(p.name for p in results.iterdir() if (p / "run.json").is_file())
    assert len(runs) == 2 and any("always-a" in r for r in runs), runs


# -- report --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["project", "results", "link", "parent"])
def test_report_into_a_foreign_folder_is_refused(results: Path, tmp_path: Path, where: str) -> None:
    project = tmp_path / "project"
    before_project = _user_folder(project)
    (tmp_path / "link").symlink_to(project)
    before_results = tree_bytes(results)
    out = {"project": project, "results": results, "link": tmp_path / "link",
           "parent": tmp_path}[where]  # fmt: skip
    run = nabench("report", str(results), "--out", str(out), "--no-plots")
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(project) == before_project
    assert tree_bytes(results) == before_results


def test_report_rewrites_its_own_folder(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert nabench("report", str(results), "--out", str(out), "--no-plots").code == 0
    run = nabench("report", str(results), "--out", str(out), "--no-plots")
    assert run.code == 0, run.stderr
    assert (out / "report.md").is_file()


def test_report_never_takes_a_users_report_md_for_its_own(results: Path, tmp_path: Path) -> None:
    """Files named like the report's are the user's unless the folder holds a report.json
    nabench wrote: a paper draft's report.md and tables/ are not replaced."""
    out = tmp_path / "paper"
    (out / "tables").mkdir(parents=True)
    (out / "report.md").write_text("# my draft\n")
    (out / "tables" / "headline.csv").write_text("mine\n")
    before = tree_bytes(out)
    run = nabench("report", str(results), "--out", str(out), "--no-plots")
    _refused(run.code, run.errors, run.stderr)
    assert "report.md" in run.errors[0]
    assert tree_bytes(out) == before
    (out / "report.json").write_text('{"version": 1, "notes": "mine"}')  # not nabench's
    before = tree_bytes(out)
    run = nabench("report", str(results), "--out", str(out), "--no-plots")
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(out) == before


def test_report_rewrites_an_earlier_or_interrupted_report_of_its_own(
    results: Path, tmp_path: Path
) -> None:
    """report.json is written first and recognised by its keys, so a report killed after it
    (tables/ half written, no report.md) and one of the earlier, indented layout are both
    rewritten."""
    out = tmp_path / "report"
    assert nabench("report", str(results), "--out", str(out), "--no-plots").code == 0
    record = json.loads((out / "report.json").read_text())
    (out / "report.md").unlink()
    (out / "report.html").unlink()
    (out / "tables" / "headline.csv").write_text("half written")
    assert nabench("report", str(results), "--out", str(out), "--no-plots").code == 0
    assert (out / "report.md").is_file()
    (out / "report.json").write_text(json.dumps(record, indent=2, sort_keys=True))
    run = nabench("report", str(results), "--out", str(out), "--no-plots")
    assert run.code == 0, run.stderr


# -- selfknow metrics ----------------------------------------------------------------------


def test_selfknow_metrics_into_a_user_folder_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("reason,type,predicted_reason,predicted_type\n")
    folder = tmp_path / "project"
    before = _user_folder(folder)
    run = nabench("selfknow", "metrics", str(table), "--out", str(folder))
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(folder) == before


# -- schema export -------------------------------------------------------------------------


def test_schema_export_into_a_user_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    before = _user_folder(folder)
    run = nabench("schema", "export", "--out", str(folder))
    _refused(run.code, run.errors, run.stderr)
    assert "not a JSON Schema export" in run.errors[0]
    assert tree_bytes(folder) == before
    again = tmp_path / "schemas"  # its own earlier export is replaced, file by file
    assert nabench("schema", "export", "--out", str(again)).code == 0
    first = tree_bytes(again)
    assert nabench("schema", "export", "--out", str(again)).code == 0
    assert tree_bytes(again) == first and all(n.endswith(".schema.json") for n in first)


# -- label ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["csv", "folder", "card", "eval-result", "summary-clash"])
def test_label_out_it_must_not_write_is_refused_before_any_request(
    mmlu_dir: Path, plain_build: Path, tmp_path: Path, scripted_server: Any, target: str
) -> None:
    """`label --out labels.csv` wrote parquet bytes under a .csv name (then unreadable as a
    labels file), `--out` an existing folder was an internal IsADirectoryError after every
    request, and `--out` a build's README.md (or an eval result, or a path whose
    `.summary.json` is someone else's file) was overwritten without a word."""
    answer = json.dumps({"na_applicable": True, "rule": "none", "rationale": "ok"})
    server = scripted_server(lambda path, body, n: (200, chat_body(answer)))
    work = tmp_path / "work"
    work.mkdir()
    (work / "existing").mkdir()
    (work / "run.parquet").write_bytes((plain_build / "original" / FILE).read_bytes())
    (work / "mine.summary.json").write_text('{"my": "notes"}\n')
    out = {
        "csv": work / "labels.csv",
        "folder": work / "existing",
        "card": work / "README.md",
        "eval-result": work / "run.parquet",
        "summary-clash": work / "mine.parquet",
    }[target]
    if target == "card":
        out.write_text((plain_build / "README.md").read_text())
    before = tree_bytes(work)
    run = nabench("label", "mmlu-na", "--source", str(mmlu_dir), "--limit", "2",
                  "--backend", "openai", "--base-url", server.url, "--model", "scripted-model",
                  "--cache", str(tmp_path / "c.sqlite"), "--out", str(out), "--quiet")  # fmt: skip
    _refused(run.code, run.errors, run.stderr)
    assert tree_bytes(work) == before
    assert server.posts == []


def test_label_out_may_replace_its_own_labels(
    mmlu_dir: Path, tmp_path: Path, scripted_server: Any
) -> None:
    answer = json.dumps({"na_applicable": True, "rule": "none", "rationale": "ok"})
    server = scripted_server(lambda path, body, n: (200, chat_body(answer)))
    out = tmp_path / "labels.parquet"
    args = ["label", "mmlu-na", "--source", str(mmlu_dir), "--limit", "2", "--backend",
            "openai", "--base-url", server.url, "--model", "m", "--cache",
            str(tmp_path / "c.sqlite"), "--out", str(out), "--quiet"]  # fmt: skip
    for _ in range(2):
        run = nabench(*args)
        assert run.code == 0, run.stderr
    assert json.loads(out.with_suffix(".summary.json").read_text())["n"] == 2


# -- --out below a file, and the one-file commands of selfknow -----------------------------


@pytest.mark.parametrize("cache", ["out", "summary"])
def test_label_cache_it_would_overwrite_is_refused_before_any_request(
    mmlu_dir: Path, tmp_path: Path, scripted_server: Any, cache: str
) -> None:
    """`label --cache L.parquet --out L.parquet` (or the cache at `L.summary.json`) filled
    the cache with every answer, then wrote the labels or the summary over it."""
    answer = json.dumps({"na_applicable": True, "rule": "none", "rationale": "ok"})
    server = scripted_server(lambda path, body, n: (200, chat_body(answer)))
    out = tmp_path / "labels.parquet"
    path = out if cache == "out" else tmp_path / "labels.summary.json"
    run = nabench("label", "mmlu-na", "--source", str(mmlu_dir), "--limit", "2",
                  "--backend", "openai", "--base-url", server.url, "--model", "scripted-model",
                  "--cache", str(path), "--out", str(out), "--quiet")  # fmt: skip
    assert run.code != 0 and "Traceback" not in run.stderr, run.stderr
    assert len(run.errors) == 1 and "is a file this command writes" in run.errors[0]
    assert server.posts == [] and not path.exists()


def _model(server: Any, tmp_path: Path) -> list[str]:
    return ["--backend", "openai", "--base-url", server.url, "--model", "scripted-model",
            "--cache", str(tmp_path / "c.sqlite"), "--quiet"]  # fmt: skip


@pytest.mark.parametrize(
    "command", ["build", "eval", "report", "export", "label", "generate", "classify"]
)
def test_out_below_a_file_is_refused_by_every_command(
    mmlu_dir: Path, plain_build: Path, results: Path, tmp_path: Path, scripted_server: Any,
    command: str,
) -> None:  # fmt: skip
    """`--out notes.txt/sub`: eval, report, export lm-eval and selfknow ended in `internal
    error: NotADirectoryError / FileExistsError`; only a build refused it in one line."""
    server = scripted_server(lambda path, body, n: (200, chat_body("{}")))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    sub, table = notes / "sub", str(notes / "sub.parquet")
    args = {
        "build": ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none",
                  "--limit", "2", "--out", str(sub)],
        "eval": ["eval", str(plain_build), "--backend", "reference", "--model", "oracle",
                 "--out", str(sub)],
        "report": ["report", str(results), "--out", str(sub)],
        "export": ["export", "lm-eval", str(plain_build), "--out", str(sub)],
        "label": ["label", "mmlu-na", "--source", str(mmlu_dir), "--limit", "2",
                  *_model(server, tmp_path), "--out", table],
        "generate": ["selfknow", "generate", *_model(server, tmp_path), "--out", table],
        "classify": ["selfknow", "classify", str(notes), *_model(server, tmp_path),
                     "--out", table],
    }[command]  # fmt: skip
    run = nabench(*args)
    _refused(run.code, run.errors, run.stderr)
    assert f"{notes} is a file, not a folder" in run.errors[0]
    assert notes.read_text() == "my notes\n" and server.posts == []


def test_publish_to_a_git_folder_below_a_file_is_refused(plain_build: Path, tmp_path: Path) -> None:
    """`publish --to git:notes.txt/repo` was `internal error: NotADirectoryError`: making the
    new repository's folder failed; the target goes through the same parent check as --out."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    run = nabench("publish", str(plain_build), "--to", f"git:{notes / 'repo'}")
    assert run.code != 0 and "Traceback" not in run.stderr, run.stderr
    assert len(run.errors) == 1, run.stderr
    assert f"--to git:{notes / 'repo'}: {notes} is a file, not a folder" in run.errors[0]
    assert notes.read_text() == "my notes\n"


@pytest.mark.parametrize("target", ["user-table", "the-tasks", "stats-clash", "folder", "csv"])
def test_selfknow_out_it_must_not_write_is_refused_before_any_request(
    plain_build: Path, tmp_path: Path, scripted_server: Any, target: str
) -> None:
    """`selfknow generate/classify --out` overwrote any file there after the model run:
    a user's parquet, the very tasks being classified, or a `<stem>.stats.json` of theirs."""
    server = scripted_server(lambda path, body, n: (200, chat_body("{}")))
    work = tmp_path / "work"
    (work / "existing").mkdir(parents=True)
    tasks = work / "tasks.parquet"
    pq.write_table(TASKS_ARROW.empty_table(), tasks)
    (work / "run.parquet").write_bytes((plain_build / "original" / FILE).read_bytes())
    (work / "mine.stats.json").write_text('{"my": "notes"}\n')
    out = {"user-table": work / "run.parquet", "the-tasks": tasks, "folder": work / "existing",
           "stats-clash": work / "mine.parquet", "csv": work / "t.csv"}[target]  # fmt: skip
    before = tree_bytes(work)
    for command in (["generate"], ["classify", str(tasks)]):
        if command == ["generate"] and target == "the-tasks":
            continue  # generate may replace its own tasks table
        run = nabench("selfknow", *command, *_model(server, tmp_path), "--out", str(out))
        _refused(run.code, run.errors, run.stderr)
        assert tree_bytes(work) == before and server.posts == []


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_convert_hf_into_a_user_folder_is_refused(tmp_path: Path, force: list[str]) -> None:
    """`llm convert-hf PROJECT` wrote config.json, model.safetensors and tokenizer files over
    whatever PROJECT held (a project's own config.json); it now refuses before converting."""
    folder = tmp_path / "project"
    _user_folder(folder)
    (folder / "config.json").write_text('{"mine": true}\n')
    before = tree_bytes(folder)
    run = nabench("llm", "convert-hf", str(folder), *force)
    _refused(run.code, run.errors, run.stderr)
    assert "not a converted model folder" in run.errors[0] and tree_bytes(folder) == before
