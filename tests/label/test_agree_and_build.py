from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from fixtures.scripted import chat_body

from nabench.cli import main
from nabench.label.agree import agreement
from nabench.label.guideline import format_item, load_guideline
from nabench.sources import get_source


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


FILE = "test-00000-of-00001.parquet"


def _labelled_build(
    mmlu_dir: Path, tmp_path: Path, llm: dict[str, Any] | None = None, limit: int = 12
) -> tuple[Path, Any]:
    """Build `limit` MMLU items with LLM labels (the recipe's local backend unless `llm`)."""
    recipe = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "nabench/recipes/mmlu-na.yaml").read_text()
    )
    recipe["variants"][1]["na_texts"] = ["None of the above"]
    if llm is not None:
        recipe["labels"]["llm"].update(llm)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    out = tmp_path / "o"
    args = [
        "build",
        str(path),
        "--source",
        str(mmlu_dir),
        "--limit",
        str(limit),
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--quiet",
    ]
    return out, CliRunner().invoke(main, args)


@pytest.mark.slow
def test_build_with_llm_labels_publishes_labels_and_quarantines(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """End to end on the real SmolLM2 (the local backend loads the model: slow), on 4 items:
    which labels lead where is tested on 12 with chosen labels below."""
    out, result = _labelled_build(mmlu_dir, tmp_path, limit=4)
    assert result.exit_code == 0, result.output
    labels = pq.read_table(out / "labels" / "test-00000-of-00001.parquet").to_pylist()
    excluded = pq.read_table(out / "excluded" / "test-00000-of-00001.parquet").to_pylist()
    original = pq.read_table(out / "original" / "test-00000-of-00001.parquet").to_pylist()
    assert len(labels) == 4  # every item labelled, whatever the model said
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


def _verdict(user_message: str) -> str:
    """The scripted labeler's answer for an item, fixed by its text: applicable,
    not applicable, or output that is never valid JSON."""
    return ("applicable", "not_applicable", "invalid")[zlib.crc32(user_message.encode()) % 3]


def test_scripted_labels_decide_exactly_which_items_are_built(
    mmlu_dir: Path, tmp_path: Path, scripted_server: Any
) -> None:
    """The labels-to-build logic with chosen labels (a scripted OpenAI-compatible server),
    so every branch is exercised on every run, not only those SmolLM2 happens to take."""
    rule = load_guideline().rule_ids[0]
    answers = {
        "applicable": json.dumps({"na_applicable": True, "rule": "none", "rationale": "ok"}),
        "not_applicable": json.dumps({"na_applicable": False, "rule": rule, "rationale": "no"}),
        "invalid": "this is not JSON",
    }

    def respond(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
        return 200, chat_body(answers[_verdict(body["messages"][-1]["content"])])

    server = scripted_server(respond)
    llm = {"backend": "openai", "base_url": server.url, "concurrency": 1}
    out, result = _labelled_build(mmlu_dir, tmp_path, llm)
    assert result.exit_code == 0, result.output

    items = get_source("mmlu").load("test", location=str(mmlu_dir), config="all", seed=0).items
    text = {
        r["id"]: format_item(r["question"], r["choices"])
        for r in items.select(["id", "question", "choices"]).to_pylist()
    }
    labels = pq.read_table(out / "labels" / "test-00000-of-00001.parquet").to_pylist()
    expected = {r["id"]: _verdict(text[r["id"]]) for r in labels}
    assert set(expected.values()) == set(answers)  # all three branches on these 12 items
    original = {r["id"] for r in pq.read_table(out / "original" / FILE).to_pylist()}
    excluded = {r["id"]: r["reason"] for r in pq.read_table(out / "excluded" / FILE).to_pylist()}
    for item_id, verdict in expected.items():
        if verdict == "applicable":
            assert item_id in original and item_id not in excluded
        else:
            reason = "not_na_applicable" if verdict == "not_applicable" else "invalid_label"
            assert excluded[item_id] == reason and item_id not in original
    invalid = [r for r in labels if expected[r["id"]] == "invalid"]
    assert all(not r["valid"] and r["attempts"] == 3 for r in invalid)  # retried, then kept
    assert {r["model"] for r in labels} == {"scripted-model"}
    assert json.loads((out / "build.json").read_text())["labels"]["mode"] == "llm"


def _strict_json(text: str) -> Any:
    """Parse as strict JSON: NaN / Infinity are not JSON."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


ALL_T, ALL_F = ["true"] * 6, ["false"] * 6


@pytest.mark.parametrize(
    ("llm", "human", "kappa", "agreement", "explained"),
    [
        (ALL_T, ALL_T, None, 1.0, "the LLM and the human labels are all applicable"),
        (ALL_T, ["true"] * 4 + ["false"] * 2, 0.0, 4 / 6, "the LLM labels are all applicable"),
        (["true", "false"] * 3, ALL_F, 0.0, 0.5, "the human labels are all not applicable"),
        (ALL_T, ALL_F, 0.0, 0.0, "the LLM labels are all applicable, the human labels all not"),
    ],
    ids=["both-one-class", "llm-one-class", "human-one-class", "each-one-class"],
)
def test_agreement_with_one_class_is_explained_and_strict_json(
    tmp_path: Path,
    llm: list[str],
    human: list[str],
    kappa: float | None,
    agreement: float,
    explained: str,
) -> None:
    """κ is undefined (both raters used one and the same class) or 0 by construction (a
    rater used one class): the output says why, raw agreement is still reported, exit 0,
    and --json stays JSON (no NaN)."""
    a = _write(tmp_path / "llm.csv", [(f"q{i}", v) for i, v in enumerate(llm)])
    b = _write(tmp_path / "human.csv", [(f"q{i}", v) for i, v in enumerate(human)])
    text = CliRunner().invoke(main, ["agree", str(a), str(b)])
    assert text.exit_code == 0, text.output
    assert f"raw agreement = {agreement:.3f}" in text.output
    assert "nan" not in text.output.lower()
    as_json = CliRunner().invoke(main, ["agree", str(a), str(b), "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = _strict_json(as_json.output)
    assert data["agreement"] == pytest.approx(agreement)
    assert explained in text.output and explained in data["note"]
    if kappa is None:
        assert data["kappa"] is None and data["ci_low"] is None and data["ci_high"] is None
        assert "kappa undefined" in text.output and "kappa undefined" in data["note"]
    else:
        assert data["kappa"] == kappa
        assert "kappa is 0" in text.output and "kappa is 0" in data["note"]


def test_agreement_without_one_class_has_no_note(tmp_path: Path) -> None:
    a = _write(tmp_path / "llm.csv", [("q0", "true"), ("q1", "false"), ("q2", "true")])
    b = _write(tmp_path / "human.csv", [("q0", "true"), ("q1", "false"), ("q2", "false")])
    data = _strict_json(CliRunner().invoke(main, ["agree", str(a), str(b), "--json"]).output)
    assert data["note"] is None and data["kappa"] == pytest.approx(0.4)
