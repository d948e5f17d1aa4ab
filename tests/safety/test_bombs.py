"""Decompression and row bombs are refused within 200 MB above start-up memory and 5 s
(issue 24, finding 8): each read runs in a fresh subprocess that reports its peak RSS and
wall time around the read (resource.getrusage)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safety_helpers import REPO

MB = 2**20
# Runs `CALL` on `PATH` and prints {"rss_mb": growth of peak RSS, "s": wall, "error": ...}.
PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    import pyarrow, pyarrow.parquet, pandas  # start-up cost is not the read's
    from nabench.core.bounded_read import read_parquet
    from nabench.validate.contributions import validate_contributions
    path = Path(sys.argv[2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    error = None
    try:
        if sys.argv[1] == "parquet":
            read_parquet(path)
        else:
            report = validate_contributions(path)
            error = "; ".join(str(v) for v in report.violations)[:300] or None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    print(json.dumps({
        "rss_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024,
        "s": time.monotonic() - start, "error": error,
    }))
    """
)


def _probe(kind: str, path: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, kind, str(path)],
        capture_output=True, text=True, timeout=120, check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _dictionary_bomb(path: Path, n: int = 200_000) -> None:
    """A dictionary column: one 100 KB string, a run-length index over `n` rows
    (20 GB decoded at 200 000 rows; about 1 MB on disk, most of it the id column)."""
    big = pa.array(["x" * 100_000], pa.string())
    col = pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), big)
    pq.write_table(pa.table({"id": pa.array(range(n)), "question": col}), path)


def _zstd_bomb(path: Path) -> None:
    """A plain (no dictionary) column of zeros, zstd-compressed: about 400 MB uncompressed."""
    n = 4_000
    table = pa.table({"question": pa.array(["\0" * 100_000] * n)})
    pq.write_table(table, path, compression="zstd", compression_level=19, use_dictionary=False)


@pytest.mark.parametrize("make", [_dictionary_bomb, _zstd_bomb], ids=["dictionary", "zstd"])
def test_a_parquet_bomb_is_refused_cheaply(tmp_path: Path, make: object) -> None:
    path = tmp_path / "bomb.parquet"
    make(path)  # type: ignore[operator]
    assert path.stat().st_size < 2 * MB
    got = _probe("parquet", path)
    assert got["error"] and "bomb" in str(got["error"]), got
    assert float(got["rss_mb"]) < 200 and float(got["s"]) < 5, got  # type: ignore[arg-type]


def _contribution(folder: Path, data: str) -> Path:
    folder.mkdir()
    (folder / "contribution.yaml").write_text(
        "name: bomb\nauthor: a <a@b>\nlicence: mit\n"
        "description: a contribution that is a bomb\n"
        f"source: {{dataset: mmlu, split: test}}\ndata: [{data}]\n"
    )
    (folder / "tests.json").write_text("[]")
    return folder


def test_a_contribution_parquet_bomb_is_refused(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "bomb", "rows.parquet")
    _dictionary_bomb(folder / "rows.parquet", 50_000)  # under the row limit: 5 GB decoded
    got = _probe("contribution", folder)
    assert got["error"] and "bomb" in str(got["error"]), got
    assert float(got["rss_mb"]) < 200 and float(got["s"]) < 5, got  # type: ignore[arg-type]


def test_six_million_empty_rows_stop_at_the_row_limit(tmp_path: Path) -> None:
    folder = _contribution(tmp_path / "bomb", "rows.jsonl")
    (folder / "rows.jsonl").write_bytes(b"{}\n" * 6_000_000)  # 18 MB: under the size limit
    got = _probe("contribution", folder)
    assert got["error"] and "rows" in str(got["error"]), got
    assert float(got["rss_mb"]) < 200 and float(got["s"]) < 5, got  # type: ignore[arg-type]


def test_a_plain_table_reads_back_identical(tmp_path: Path) -> None:
    from nabench.core.bounded_read import read_parquet

    table = pa.table({
        "id": ["a", "b", None], "choices": [["x", "y"], ["z"], None], "answer": [0, 1, 2],
        "question": ["q1", None, "q3"], "empty": pa.nulls(3, pa.string()),
        "no_choices": pa.array([None, None, None], pa.list_(pa.string())),
    })  # fmt: skip
    pq.write_table(table, tmp_path / "t.parquet")
    assert read_parquet(tmp_path / "t.parquet").equals(table)
