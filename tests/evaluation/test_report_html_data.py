"""report.html without a browser: one file with nothing fetched from elsewhere, and the
embedded item data (gzip + base64 JSON) decodes to the answers in the result files."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from nabench.evaluation.report import write_report


def _write_run(root: Path, run: str, config: str, rng: np.random.Generator) -> pd.DataFrame:
    n = 40
    ids = [f"mmlu/all/test/{k:05d}" for k in range(n)]
    pick = rng.integers(0, 4, n)
    invalid = rng.random(n) < 0.1
    df = pd.DataFrame({
        "id": ids, "source_id": ids, "subject": ["anatomy", "virology"] * (n // 2),
        "raw_output": [f"Answer: {'ABCD'[p]}" for p in pick],
        "parsed": [None if bad else "ABCD"[p] for p, bad in zip(pick, invalid, strict=True)],
        "gold": "A", "correct": (pick == 0) & ~invalid, "invalid": invalid,
        "score": np.where(invalid, 0.25, (pick == 0) * 1.0), "confidence": np.nan,
    })  # fmt: skip
    (root / run).mkdir(parents=True, exist_ok=True)
    df.to_parquet(root / run / f"{config}.parquet", index=False)
    summary = {"config": config, "model": run, "backend": "local", "mode": "generate",
               "kind": "mc", "invalid_credit": 0.25, "dataset": "org/not-local"}  # fmt: skip
    (root / run / f"{config}.summary.json").write_text(json.dumps(summary))
    return df


def test_page_is_self_contained_and_data_decodes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    frames = {
        (run, cfg): _write_run(tmp_path / "res", run, cfg, rng)
        for run in ("m1", "m2")
        for cfg in ("original", "na_keyed")
    }
    write_report([tmp_path / "res"], tmp_path / "out", plots=False)
    html = (tmp_path / "out" / "report.html").read_text("utf-8")
    # nothing loads from elsewhere: no src/href to another location, no @import or url()
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", html)
    assert refs and all(r.startswith(("#", "data:")) for r in refs), refs
    assert "@import" not in html and "url(" not in html
    blob = re.search(r'<script id="nabench-data"[^>]*>([^<]*)</script>', html)
    assert blob is not None
    data = json.loads(gzip.decompress(base64.b64decode(blob.group(1))))
    assert data["configs"] == ["original", "na_keyed"] and data["models"] == ["m1", "m2"]
    assert data["text"] == {}  # a hub dataset: no local text to embed
    for (run, cfg), df in frames.items():
        entry = data["res"][cfg][run]
        assert data["ids"] == df["source_id"].tolist()
        states = entry["s"]
        assert [s == "?" for s in states] == df["invalid"].tolist()
        assert [s.isupper() for s in states] == df["correct"].tolist()
        letters = [s.upper() for s, bad in zip(states, df["invalid"], strict=True) if not bad]
        assert letters == df.loc[~df["invalid"], "parsed"].tolist()
        raw = [data["strings"][c] for c in entry["raw"]]
        assert raw == df["raw_output"].tolist()
        assert "conf" not in entry  # no confidences recorded
    subjects = [data["subjects"][c] for c in data["subj"]]
    assert subjects == frames[("m1", "original")]["subject"].tolist()
