"""The card says how many items were labeled, not "every source item"."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from nabench.cli import main as nabench_main


def test_card_states_label_coverage(mmlu_dir: Path, tmp_path: Path) -> None:
    ids = [f"mmlu/all/test/{k:05d}" for k in range(10)]
    labels = tmp_path / "labels.csv"
    labels.write_text("id,na_applicable\n" + "".join(f"{i},true\n" for i in ids))
    out = tmp_path / "o"
    args = ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", str(labels),
            "--limit", "30", "--out", str(out), "--quiet"]  # fmt: skip
    result = CliRunner().invoke(nabench_main, args)
    assert result.exit_code == 0, result.output
    card = (out / "README.md").read_text()
    assert "labels of 10 of the" in card
    assert "label of every source item" not in card
