"""`nabench eval --sample N`: N items per config, stratified by subject as build's sample,
the same items in every config (so each variant stays paired with `original`)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("evsample") / "b"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "400"]
    res = CliRunner().invoke(main, [*args, "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    return out


def _eval(built: Path, out: Path, *extra: str) -> CliRunner:
    args = ["eval", str(built), "--backend", "reference", "--model", "oracle", "--quiet"]
    return CliRunner().invoke(main, [*args, "--out", str(out), "--run-name", "r", *extra])


def test_sample_is_stratified_and_paired_across_configs(built: Path, tmp_path: Path) -> None:
    res = _eval(built, tmp_path / "res", "--config", "original", "--config", "na_keyed",
                "--sample", "30")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = tmp_path / "res" / "r"
    ids = {}
    for config in ("original", "na_keyed"):
        rows = pq.read_table(run / f"{config}.parquet").to_pylist()
        ids[config] = {r["id"] for r in rows}
        assert len(rows) == 30
    assert ids["original"] == ids["na_keyed"]
    source = pq.read_table(built / "original" / "test-00000-of-00001.parquet").to_pylist()
    subject = {r["id"]: r["subject"] for r in source}
    by_subject = {s: sum(subject[i] == s for i in ids["original"]) for s in set(subject.values())}
    assert min(by_subject.values()) >= 1  # every subject of the build is drawn from
    first_30 = {r["id"] for r in source[:30]}
    assert ids["original"] != first_30  # not --limit's prefix (one subject)
    settings = json.loads((run / "run.json").read_text())
    assert settings["settings"]["sample"] == 30  # part of the run identity


def test_limit_and_sample_exclude_each_other(built: Path, tmp_path: Path) -> None:
    res = _eval(built, tmp_path / "res", "--sample", "5", "--limit", "5")
    assert res.exit_code != 0
    assert "--limit and --sample exclude each other" in res.output


def test_a_sample_larger_than_the_config_is_refused(built: Path, tmp_path: Path) -> None:
    """All of a config's items is not a sample: the run would record `sample: 100000`."""
    res = _eval(built, tmp_path / "res", "--config", "original", "--sample", "100000")
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    n = pq.read_metadata(built / "original" / "test-00000-of-00001.parquet").num_rows
    assert errors == [
        f"error: --sample 100000 is more than the {n} items of config original: use a "
        "smaller --sample, or none to evaluate them all"
    ]
    assert not (tmp_path / "res" / "r" / "original.parquet").exists()
