"""`nabench report --redux`: every headline drop split into MMLU-Redux `ok` vs flagged items,
checked against accuracies computed here with plain loops."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.schemas.kinds import arrow_schema

N = 60


def _write(root: Path, config: str, correct: np.ndarray) -> None:
    """One `nabench eval` result file pair (the on-disk contract: parquet + summary.json)."""
    ids = [f"mmlu/all/test/{k:05d}" for k in range(N)]
    root.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({
        "id": ids, "source_id": ids, "subject": ["anatomy"] * N, "score": correct * 1.0,
        "correct": correct, "invalid": np.zeros(N, bool), "confidence": np.full(N, np.nan),
        "gold": ["ABCD"[k % 4] for k in range(N)],
    }).to_parquet(root / f"{config}.parquet", index=False)  # fmt: skip
    summary = {"config": config, "model": "m", "backend": "local", "mode": "generate",
               "kind": "mc", "invalid_credit": 0.0}  # fmt: skip
    (root / f"{config}.summary.json").write_text(json.dumps(summary))


def _annotations(build: Path, types: dict[int, str]) -> None:
    """A build's `redux` config, as `audit.redux` writes it."""
    rows = [
        {"id": f"mmlu/all/test/{k:05d}", "subject": "anatomy", "error_type": t,
         "flagged": False, "annotation_source": None, "correct_answer": None,
         "potential_reason": None}
        for k, t in types.items()
    ]  # fmt: skip
    (build / "redux").mkdir(parents=True)
    table = pa.Table.from_pylist(rows, schema=arrow_schema("redux_annotation"))
    pq.write_table(table, build / "redux" / "test-00000-of-00001.parquet")


def test_headline_split_into_redux_ok_and_flagged(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    original, variant = rng.random(N) < 0.8, rng.random(N) < 0.4
    _write(tmp_path / "res" / "m", "original", original)
    _write(tmp_path / "res" / "m", "na_keyed", variant)
    # 30 ok, 20 of other error types (expert among them), the last 10 items not annotated
    kinds = ["wrong_groundtruth", "expert", "bad_question_clarity", "no_correct_answer"]
    types = {k: "ok" if k < 30 else kinds[k % len(kinds)] for k in range(50)}
    _annotations(tmp_path / "build", types)
    out = tmp_path / "r"
    args = ["report", str(tmp_path / "res"), "--out", str(out), "--no-plots"]
    res = CliRunner().invoke(main, [*args, "--redux", str(tmp_path / "build")])
    assert res.exit_code == 0, res.output
    rows = {r["redux"]: r for r in json.loads((out / "report.json").read_text())["headline_redux"]}
    assert set(rows) == {"ok", "flagged"}
    for group, members in (("ok", range(30)), ("flagged", range(30, 50))):
        ks = list(members)
        acc_o = sum(original[k] for k in ks) / len(ks)
        acc_v = sum(variant[k] for k in ks) / len(ks)
        row = rows[group]
        assert row["config"] == "na_keyed" and row["n"] == len(ks)
        assert row["acc_original"] == pytest.approx(acc_o)
        assert row["acc_variant"] == pytest.approx(acc_v)
        assert row["diff"] == pytest.approx(acc_o - acc_v)
        assert row["diff_ci"][0] <= row["diff"] <= row["diff_ci"][1]
    assert (out / "tables" / "headline_redux.csv").is_file()
    markdown = (out / "report.md").read_text()
    assert "### MMLU-Redux `ok` vs flagged items" in markdown
    assert "| m | na_keyed | ok | 30 |" in markdown
    assert "| m | na_keyed | flagged | 20 |" in markdown

    plain = tmp_path / "plain"
    CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--out", str(plain), "--no-plots"])
    assert "headline_redux" not in json.loads((plain / "report.json").read_text())
    assert "MMLU-Redux" not in (plain / "report.md").read_text()


def test_redux_without_annotations_is_one_line(tmp_path: Path) -> None:
    _write(tmp_path / "res" / "m", "original", np.ones(N, bool))
    (tmp_path / "build").mkdir()
    res = CliRunner().invoke(
        main, ["report", str(tmp_path / "res"), "--out", str(tmp_path / "r"),
               "--redux", str(tmp_path / "build")],
    )  # fmt: skip
    assert res.exit_code != 0 and "no redux config" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "r").exists()
