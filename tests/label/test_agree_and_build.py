from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.label.agree import agreement


def _write(path: Path, rows: list[tuple[str, object]]) -> Path:
    path.write_text("id,na_applicable\n" + "".join(f"{i},{v}\n" for i, v in rows))
    return path


def test_agreement_matches_a_hand_computed_kappa(tmp_path: Path) -> None:
    # 10 items. LLM: T T T T T T F F F F ; human: T T T T F F F F F T
    # confusion (llm x human): TT=4 TF=2 FT=1 FF=3 ; p_o = 7/10
    # p_e = (6/10)(5/10) + (4/10)(5/10) = 0.5 ; kappa = (0.7-0.5)/(1-0.5) = 0.4
    llm = ["true"] * 6 + ["false"] * 4
    human = ["true"] * 4 + ["false"] * 5 + ["true"]
    a = _write(tmp_path / "llm.csv", [(f"q{i}", v) for i, v in enumerate(llm)] + [("q10", "")])
    b = _write(tmp_path / "human.csv", [(f"q{i}", v) for i, v in enumerate(human)])
    result = agreement(a, b)
    assert result.n == 10
    assert result.agreement == pytest.approx(0.7)
    assert result.kappa == pytest.approx(0.4)
    assert result.ci_low <= result.kappa <= result.ci_high
    assert result.confusion["llm_applicable"] == {"human_applicable": 4, "human_not_applicable": 2}
    assert result.confusion["llm_not_applicable"] == {
        "human_applicable": 1,
        "human_not_applicable": 3,
    }
    assert result.excluded["only_in_llm"] == 1
    out = CliRunner().invoke(main, ["agree", str(a), str(b), "--json"])
    assert out.exit_code == 0
    assert json.loads(out.output)["kappa"] == pytest.approx(0.4)


def test_build_with_llm_labels_publishes_labels_and_quarantines(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    recipe = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "nabench/recipes/mmlu-na.yaml").read_text()
    )
    recipe["variants"][1]["na_texts"] = ["None of the above"]
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    out = tmp_path / "o"
    args = [
        "build",
        str(path),
        "--source",
        str(mmlu_dir),
        "--limit",
        "12",
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--quiet",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    labels = pq.read_table(out / "labels" / "test-00000-of-00001.parquet").to_pylist()
    excluded = pq.read_table(out / "excluded" / "test-00000-of-00001.parquet").to_pylist()
    original = pq.read_table(out / "original" / "test-00000-of-00001.parquet").to_pylist()
    by_id = {r["id"]: r for r in labels}
    reasons = {r["id"]: r["reason"] for r in excluded}
    for item_id, label in by_id.items():
        if label["na_applicable"] is True:
            assert item_id in {r["id"] for r in original}
        elif label["na_applicable"] is False:
            assert reasons[item_id] == "not_na_applicable"
        else:
            assert reasons[item_id] == "invalid_label"
    assert all(r["na_applicable"] is True for r in original)
    assert {r["labeler"] for r in original} <= {labels[0]["model"]}
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["labels"]["mode"] == "llm"
    assert manifest["labels"]["guideline_version"] == labels[0]["guideline_version"]
    card = (out / "README.md").read_text()
    assert labels[0]["guideline_version"] in card
