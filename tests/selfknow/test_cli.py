"""The `selfknow metrics` command through click's runner and once as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nabench.cli.selfknow import selfknow
from nabench.selfknow import load_selfknow_table, selfknow_metrics

REPO = Path(__file__).resolve().parents[2]
SCORE_KEYS = (
    "accuracy",
    "foresight",
    "insight",
    "overconfidence",
    "conservatism",
    "confidence_balance",
    "harmonic_fi",
)


def _gpt4o_vanilla(files: list[Path]) -> Path:
    (path,) = [p for p in files if p.parent.name == "vanilla_prompt" and p.stem == "gpt-4o_results"]
    return path


def test_json_output_matches_library(reference_files: list[Path]) -> None:
    path = _gpt4o_vanilla(reference_files)
    result = CliRunner().invoke(selfknow, ["metrics", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = selfknow_metrics(load_selfknow_table(path))
    assert data["match"] == "reason"
    assert data["n"] == 800
    for key in SCORE_KEYS:
        assert data[key] == getattr(expected.scores, key), key
    assert data["counts"] == expected.counts.as_dict()
    assert set(data["by_type"]) == set(expected.by_type)
    functional = data["by_type"]["functional_capability"]
    assert functional["accuracy"] == expected.by_type["functional_capability"].scores.accuracy
    assert functional["name"] == "Functional capability"
    assert set(data["variants"]) == {"reason", "type"}
    type_level = selfknow_metrics(load_selfknow_table(path), match="type")
    assert data["variants"]["type"]["accuracy"] == type_level.scores.accuracy
    assert data["variants"]["reason"]["accuracy"] == expected.scores.accuracy
    assert sum(map(sum, data["confusion"]["counts"])) == 800
    assert data["quality"]["invalid_rows"] == 0
    assert data["top_mismatches"][0]["count"] >= data["top_mismatches"][-1]["count"]


def test_match_type_moves_top_level(reference_files: list[Path]) -> None:
    path = _gpt4o_vanilla(reference_files)
    result = CliRunner().invoke(selfknow, ["metrics", str(path), "--json", "--match", "type"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["match"] == "type"
    assert data["accuracy"] == data["variants"]["type"]["accuracy"]
    assert data["accuracy"] > data["variants"]["reason"]["accuracy"]


def test_text_output(reference_files: list[Path]) -> None:
    path = _gpt4o_vanilla(reference_files)
    result = CliRunner().invoke(selfknow, ["metrics", str(path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "reason-level" in out and "type-level" in out
    assert "Functional capability" in out and "Temporal perception" in out
    accuracy = selfknow_metrics(load_selfknow_table(path)).scores.accuracy
    assert f"{accuracy:.3f}" in out


def test_columns_option_and_undefined_scores(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    pd.DataFrame(
        {
            "G": ["Feasible", "feasible"],
            "GR": ["", ""],
            "C": ["Feasible", "Infeasible"],
            "CR": ["", "x"],
        }
    ).to_csv(path, index=False)
    args = ["metrics", str(path), "--json", "--columns", "generated_class=G,classified_class=C"]
    args += ["--columns", "generated_reason=GR,classified_reason=CR"]
    result = CliRunner().invoke(selfknow, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["counts"]["N_ff"] == 1 and data["counts"]["N_fr"] == 1
    assert data["foresight"] is None  # no generated-infeasible rows: undefined, JSON null
    assert data["accuracy"] == 0.5
    text = CliRunner().invoke(selfknow, [arg for arg in args if arg != "--json"])
    assert text.exit_code == 0 and "—" in text.stdout


def test_invalid_rows_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "generated_class,generated_reason,classified_class,classified_reason\n"
        "Feasible,,Feasible,\nperhaps,,Feasible,\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(selfknow, ["metrics", str(path)])
    assert result.exit_code == 0
    assert "invalid class: 1" in result.stdout
    assert "generated_class='perhaps'" in result.stdout


@pytest.mark.parametrize("body", ["perhaps,,Feasible,\nFeasible,,maybe,\n", ""])
def test_no_valid_row_is_refused(tmp_path: Path, body: str) -> None:
    """Every row invalid (or none at all): it printed n 0 and every score undefined and
    exited 0, metrics of nothing; like `nabench eval` on no items, it is one error line."""
    path = tmp_path / "t.csv"
    header = "generated_class,generated_reason,classified_class,classified_reason\n"
    path.write_text(header + body, encoding="utf-8")
    for extra in ([], ["--json"], ["--out", str(tmp_path / "rep")]):
        result = CliRunner().invoke(selfknow, ["metrics", str(path), *extra])
        assert result.exit_code == 2 and result.stdout == ""
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and "nothing to score" in line
        assert not (tmp_path / "rep").exists()


def test_out_writes_report_and_charts(reference_files: list[Path], tmp_path: Path) -> None:
    path = _gpt4o_vanilla(reference_files)
    out = tmp_path / "report"
    result = CliRunner().invoke(selfknow, ["metrics", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    pngs = sorted(out.glob("*.png"))
    assert [p.name for p in pngs] == [
        "type_contextual_awareness.png",
        "type_ethical_integrity.png",
        "type_functional_capability.png",
        "type_identification_of_ambiguity.png",
        "type_temporal_perception.png",
    ]
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Self-knowledge metrics: gpt-4o_results.csv")
    assert "## By generated type (reason-level)" in report and "type-level" in report
    assert "![type_temporal_perception](type_temporal_perception.png)" in report
    saved = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert saved["n"] == 800
    # its own folder is rewritten in place ...
    again = CliRunner().invoke(selfknow, ["metrics", str(path), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "report.md").read_text(encoding="utf-8") == report


def test_out_never_takes_a_users_report_md_for_its_own(
    reference_files: list[Path], tmp_path: Path
) -> None:
    """... but a folder holding only a user's report.md (no metrics.json of ours) is not."""
    out = tmp_path / "paper"
    out.mkdir()
    (out / "report.md").write_text("# my draft\n", encoding="utf-8")
    result = CliRunner().invoke(selfknow, ["metrics", str(_gpt4o_vanilla(reference_files)),
                                           "--out", str(out)])  # fmt: skip
    assert result.exit_code != 0 and "report.md" in result.stderr, result.output
    assert [p.name for p in out.iterdir()] == ["report.md"]
    assert (out / "report.md").read_text(encoding="utf-8") == "# my draft\n"


@pytest.mark.parametrize(
    ("table", "extra", "fragment"),
    [
        ("missing.csv", [], "no such file"),
        ("bad.csv", ["--columns", "generated_class"], "bad column mapping"),
        ("bad.csv", [], "missing column(s)"),
        ("bad.csv", ["--columns", "generated_class=nope"], "column 'nope'"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, table: str, extra: list[str], fragment: str) -> None:
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    result = CliRunner().invoke(selfknow, ["metrics", str(tmp_path / table), *extra])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0]


def test_out_not_writable(reference_files: list[Path], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    path = _gpt4o_vanilla(reference_files)
    result = CliRunner().invoke(selfknow, ["metrics", str(path), "--out", str(blocker / "sub")])
    assert result.exit_code == 2  # refused by the one --out guard, before the table is read
    assert result.stderr.startswith(f"error: --out {blocker / 'sub'}: {blocker} is a file")


def test_real_subprocess(reference_files: list[Path], tmp_path: Path) -> None:
    path = _gpt4o_vanilla(reference_files)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "nabench.cli", "selfknow", "metrics", str(path), "--json"]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["n"] == 800
    assert data["accuracy"] == selfknow_metrics(load_selfknow_table(path)).scores.accuracy
    failed = subprocess.run(
        [*command[:5], str(tmp_path / "absent.csv")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 2
    assert failed.stderr.strip().startswith("error: cannot read") and failed.stdout == ""


@pytest.mark.parametrize(
    ("command", "out", "cache"),
    [
        ("generate", "t.parquet", "t.parquet"),
        ("generate", "t.parquet", "t.quarantine.parquet"),
        ("generate", "t.parquet", "t.stats.json"),
        ("classify", "v.parquet", "v.parquet"),
        ("classify", "v.parquet", "v.stats.json"),
    ],
)
def test_cache_that_the_command_writes_is_refused(
    tmp_path: Path, command: str, out: str, cache: str
) -> None:
    """`--cache` naming --out or one of its side files: the cache was filled, then replaced
    by the table or the stats, every answer lost (and the next run refused the cache)."""
    tasks = tmp_path / "tasks.parquet"
    pd.DataFrame(
        [{"task_id": "a", "task": "Do X.", "category": "feasible", "type": "", "reason": ""}]
    ).to_parquet(tasks)
    inputs = [str(tasks)] if command == "classify" else []
    model = ["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    args = [
        command,
        *inputs,
        *model,
        "--out",
        str(tmp_path / out),
        "--cache",
        str(tmp_path / cache),
    ]
    result = CliRunner().invoke(selfknow, args)
    assert result.exit_code == 2 and "--cache" in result.stderr, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.parquet"]
