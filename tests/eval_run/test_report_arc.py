"""A report over ARC runs: ARC items have no subject, so the eval parquet's `subject` column
is all null (Arrow type `null`); the report ended in `internal error:
ArrowNotImplementedError: Unification of null dictionaries is not implemented`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from nabench.cli import main


def _ok(*args: str) -> None:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output


def test_report_over_arc_runs(arc_dir: Path, tmp_path: Path) -> None:
    build, results, report = tmp_path / "arc-na", tmp_path / "results", tmp_path / "report"
    _ok("build", "arc-na", "--source", str(arc_dir), "--out", str(build), "--labels", "none",
        "--limit", "40", "--quiet")  # fmt: skip
    for strategy in ("always-a", "oracle"):
        configs = ("--config", "original", "--config", "na_keyed")
        _ok("eval", str(build), "--backend", "reference", "--model", strategy, *configs,
            "--out", str(results), "--quiet")  # fmt: skip
    responses = next(results.glob("*/original.parquet"))
    assert pq.read_schema(responses).field("subject").type == pa.null()  # the hard case
    _ok("report", str(results), "--out", str(report), "--no-plots")
    rows = json.loads((report / "report.json").read_text())["headline"]
    got = {(r["run"], r["config"], r["n"], r["acc_original"], r["acc_variant"]) for r in rows}
    assert ("reference_oracle", "na_keyed", 40, 1.0, 1.0) in got, got
    assert {r["run"] for r in rows} == {"reference_oracle", "reference_always-a"}
    assert (report / "report.html").is_file()
