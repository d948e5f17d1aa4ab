"""Unit tests of the evaluator's pieces: strategies, prompts, loglik renormalisation,
parse/score/summary on hand-made outputs, report tables on hand-made results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import CHEAP

from nabench.core.errors import NabenchError
from nabench.evaluation.panel import make_panel
from nabench.evaluation.producers import _first_token_options
from nabench.evaluation.prompts import (
    artifact_request,
    cot_prompt,
    format_choices,
    letter_prompt,
    mc_request,
)
from nabench.evaluation.report import build_report
from nabench.evaluation.results import Results, category_of
from nabench.evaluation.runner import (
    Produced,
    StrategyProducer,
    build_items,
    evaluate_config,
    model_slug,
    option_logprobs,
    renormalise,
    score_outputs,
)
from nabench.evaluation.strategies import STRATEGIES, ItemBatch, get_strategy
from nabench.llm import Completion, TokenLogprob

CHOICES = [["a", "bbb", "cc", "d"], ["xx", "y", "zz", "w"], ["1", "22", "333", "4444"]]


def _batch(gold: list[int]) -> ItemBatch:
    return ItemBatch.from_lists([f"i{k}" for k in range(len(gold))], CHOICES[: len(gold)], gold)


# ------------------------------------------------------------------------ strategies


def test_registry_has_the_four_strategies_and_rejects_unknown() -> None:
    assert {"always-a", "majority", "longest", "oracle"} <= set(STRATEGIES)
    with pytest.raises(NabenchError, match=r"unknown reference strategy 'random'.*oracle"):
        get_strategy("random")


def test_strategies_on_hand_made_items() -> None:
    b = _batch([2, 2, 1])
    assert get_strategy("always-a").choose(b).tolist() == [0, 0, 0]
    assert get_strategy("oracle").choose(b).tolist() == [2, 2, 1]
    assert get_strategy("majority").choose(b).tolist() == [2, 2, 2]
    # longest: "bbb" (1); "xx" and "zz" tie at 2 chars -> earliest (0); "4444" (3)
    assert get_strategy("longest").choose(b).tolist() == [1, 0, 3]


def test_majority_tie_takes_earliest_letter() -> None:
    assert get_strategy("majority").choose(_batch([3, 1])).tolist() == [1, 1]


def test_item_batch_rejects_gold_outside_options() -> None:
    with pytest.raises(ValueError, match="gold index"):
        ItemBatch.from_lists(["x"], [["a", "b"]], [2])


# ------------------------------------------------------------------------- prompts


def test_cot_prompt_lists_options_and_asks_for_answer_line() -> None:
    p = cot_prompt("What is 2+2?", ["3", "4", "5"])
    assert "Question: What is 2+2?" in p
    assert "A. 3\nB. 4\nC. 5" in p
    assert "'Answer: X'" in p and "A, B or C" in p
    assert format_choices(["x"]) == "A. x"
    assert "Respond with only the letter (A, B, C or D)" in letter_prompt("q", list("wxyz"))


def test_requests_per_mode() -> None:
    g = mc_request("q", ["a", "b"], "generate", max_tokens=32)
    assert g.messages is not None and g.max_tokens == 32 and g.logprobs is None
    lg = mc_request("q", ["a", "b"], "loglik", logprobs_k=5)
    assert lg.max_tokens == 1 and lg.logprobs == 5
    a = artifact_request("Q\nAnswer:", "\nQuestion:", "generate", max_tokens=8)
    assert a.prompt == "Q\nAnswer:" and a.stop == ("\nQuestion:",) and a.messages is None
    al = artifact_request("Q\nAnswer:", "\nQuestion:", "loglik")
    assert al.prompt == "Q\nAnswer: (" and al.stop == () and al.max_tokens == 1


# ------------------------------------------------------------ loglik renormalisation


def test_option_logprobs_pools_token_variants_and_ignores_others() -> None:
    top = [("A", math.log(0.3)), (" A", math.log(0.1)), ("(B", math.log(0.2)),
           ("The", math.log(0.25)), ("E", math.log(0.05)), ("a", math.log(0.05))]  # fmt: skip
    lp = option_logprobs(top, 4)
    assert lp[0] == pytest.approx(math.log(0.4))
    assert lp[1] == pytest.approx(math.log(0.2))
    assert lp[2] == -math.inf and lp[3] == -math.inf  # E is out of range, a is lowercase
    probs = renormalise(lp)
    assert probs is not None
    np.testing.assert_allclose(probs, [2 / 3, 1 / 3, 0.0, 0.0])


def test_renormalise_without_any_option_letter_is_none() -> None:
    assert renormalise(option_logprobs([("The", -0.1), ("I", -2.0)], 4)) is None


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_a_non_finite_option_logprob_is_an_invalid_answer_not_a_pick(bad: float) -> None:
    """A server's +inf log-prob for 'A' became probability NaN, and argmax answered A."""
    assert renormalise(option_logprobs([("A", math.inf), ("B", -0.1)], 4)) is None
    assert renormalise([bad, -0.1, -math.inf, -math.inf]) is None
    # a NaN among the top-k tokens is no log-prob for that token: the others still count
    probs = renormalise(option_logprobs([("A", math.nan), ("B", -0.1)], 4))
    assert probs is not None and int(np.argmax(probs)) == 1


@CHEAP
@given(
    st.lists(st.floats(-30, 0, allow_nan=False), min_size=2, max_size=6),
    st.floats(-20, 20, allow_nan=False),
)
def test_renormalise_sums_to_one_and_is_shift_invariant(lps: list[float], shift: float) -> None:
    p = renormalise(lps)
    q = renormalise([x + shift for x in lps])
    assert p is not None and q is not None
    assert p.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p, q, rtol=1e-9, atol=1e-12)
    assert p[int(np.argmax(lps))] == pytest.approx(p.max())


def _mc_frame(gold: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"i{k}" for k in range(len(gold))],
            "subject": ["anatomy"] * len(gold),
            "question": ["q"] * len(gold),
            "choices": CHOICES[: len(gold)],
            "answer": gold,
        }
    )


def test_loglik_scores_prediction_and_confidence() -> None:
    items = build_items("original", _mc_frame([0, 1, 2]))
    produced = Produced(
        ["A", "A", "The"],
        [
            [math.log(0.6), math.log(0.2), -math.inf, -math.inf],
            [math.log(0.5), math.log(0.25), math.log(0.25), -math.inf],
            [-math.inf] * 4,
        ],
    )
    r = score_outputs(items, produced, "m", invalid_credit=0.25)
    assert r["parsed"].tolist() == ["A", "A", None]
    assert r["score"].tolist() == [1.0, 0.0, 0.25]
    assert r["confidence"].iloc[0] == pytest.approx(0.75)
    assert r["confidence"].iloc[1] == pytest.approx(0.5)
    assert math.isnan(r["confidence"].iloc[2])
    assert r["invalid"].tolist() == [False, False, True]


# --------------------------------------------------------------- score + summary


def test_generate_parse_score_and_summary(tmp_path: Path) -> None:
    items = build_items("original", _mc_frame([0, 1, 2]))

    class Fixed:
        model_id, backend_name, mode = "fixed/model", "test", "generate"

        def produce(self, items: object) -> Produced:
            return Produced(["blah\nAnswer: A", "Answer: (C)", "no idea"], calls=3)

    res = evaluate_config(items, Fixed(), tmp_path / "fixed_model", invalid_credit=0.25)  # type: ignore[arg-type]
    s = res.summary
    got = (s["n"], s["calls"], s["cache_hits"], s["model"], s["config"])
    assert got == (3, 3, 0, "fixed/model", "original")
    assert s["accuracy"] == pytest.approx(1 / 3)  # strict: the invalid answer is wrong
    assert s["score"] == pytest.approx((1 + 0 + 0.25) / 3)  # the credit lives in `score`
    assert s["invalid_rate"] == pytest.approx(1 / 3)
    assert s["majority_baseline"] == pytest.approx(1 / 3)
    assert s["ci_method"] == "wilson"  # accuracy is 0/1 per item
    assert s["score_ci_method"] == "bootstrap"  # partial credit present
    assert s["ci_low"] <= s["accuracy"] <= s["ci_high"]
    assert s["score_ci_low"] <= s["score"] <= s["score_ci_high"]
    on_disk = json.loads(res.summary_path.read_text())
    assert on_disk["accuracy"] == pytest.approx(s["accuracy"])
    df = pd.read_parquet(res.parquet)
    assert {"id", "config", "model", "subject", "raw_output", "parsed", "correct", "score",
            "confidence"} <= set(df.columns)  # fmt: skip
    assert df["raw_output"].tolist() == ["blah\nAnswer: A", "Answer: (C)", "no idea"]
    assert df["correct"].tolist() == [True, False, False]
    strict = evaluate_config(items, Fixed(), tmp_path / "strict", invalid_credit=0.0)  # type: ignore[arg-type]
    assert strict.summary["accuracy"] == strict.summary["score"] == pytest.approx(1 / 3)
    assert strict.summary["score_ci_method"] == "wilson"


def test_prior_config_scored_per_item() -> None:
    rows = pd.DataFrame(
        {
            "id": [f"x#{j}" for j in range(4)] + [f"y#{j}" for j in range(4)],
            "item_id": ["x"] * 4 + ["y"] * 4,
            "prompt": ["p"] * 8,
            "target": ["False", "True", "False", "False", "True", "False", "False", "False"],
            "stop": ["\n"] * 8,
            "choice_index": [0, 1, 2, 3] * 2,
            "choices": [["a", "b", "c", "d"]] * 8,
            "answer": [1] * 4 + [0] * 4,
            "subject": ["anatomy"] * 8,
        }
    )
    items = build_items("prior_choice", rows)
    assert items.kind == "prior" and list(items.batch.ids) == ["x", "y"]
    raw = [" True", " True", " False", "junk", " False", " False", " False", " False"]
    r = score_outputs(items, Produced(raw), "m", invalid_credit=0.25)
    assert r["parsed"].tolist() == ["TTF?", "FFFF"]
    assert r["score"].tolist() == [0.5, 0.25]  # gold in S of size 2; empty S -> credit
    assert r["invalid"].tolist() == [False, True]
    oracle = StrategyProducer(get_strategy("oracle")).produce(items)
    assert score_outputs(items, oracle, "o")["score"].tolist() == [1.0, 1.0]


def test_config_without_targets_is_rejected() -> None:
    df = pd.DataFrame({"id": ["a"], "prompt": ["p"], "target": [None], "stop": ["\n"]})
    with pytest.raises(NabenchError, match="no targets"):
        build_items("qi_step1", df)


def test_model_slug() -> None:
    assert model_slug("reference/always-a") == "reference_always-a"
    assert model_slug("org/Model 7B:q4", "loglik") == "org_Model_7B_q4__loglik"


# ------------------------------------------------------------------------ report


def _results(scores: dict[tuple[str, str], list[float]], subjects: list[str]) -> Results:
    frames, rows = [], []
    for (run, config), s in scores.items():
        n = len(s)
        ids = [f"i{k}" for k in range(n)]
        frames.append(pd.DataFrame({
            "run": run, "config": config, "id": ids, "source_id": ids,
            "subject": subjects[:n], "score": s, "correct": [x == 1.0 for x in s],
            "invalid": [False] * n, "confidence": [np.nan] * n, "gold": ["A", "B"] * (n // 2),
        }))  # fmt: skip
        rows.append({"run": run, "model": run, "mode": "generate", "backend": "t",
                     "config": config, "kind": "mc", "invalid_credit": 0.25})  # fmt: skip
    return Results(pd.DataFrame(rows), pd.concat(frames, ignore_index=True))


def test_report_tables_on_hand_made_results() -> None:
    subj = ["anatomy", "anatomy", "philosophy", "philosophy"]
    res = _results(
        {
            ("m1", "original"): [1, 1, 1, 1],
            ("m2", "original"): [1, 0, 1, 0],
            ("m3", "original"): [0, 0, 0, 1],
            ("m1", "na_keyed"): [1, 0, 1, 1],
            ("m2", "na_keyed"): [0, 0, 1, 0],
            ("m3", "na_keyed"): [0, 0, 0, 0],
            ("m1", "na_keyed__answer_not_found"): [1, 1, 1, 1],
        },
        subj,
    )
    rep = build_report(res)
    cfg = rep.tables["configs"].set_index(["run", "config"])
    assert cfg.loc[("m2", "original"), "accuracy"] == 0.5
    assert cfg.loc[("m2", "original"), "majority_baseline"] == 0.5
    subjects = rep.tables["headline_subjects"]
    m1 = subjects[(subjects["run"] == "m1") & (subjects["config"] == "na_keyed")]
    m1 = m1.set_index("subject")
    assert m1.loc["anatomy", "diff"] == pytest.approx(0.5)
    assert m1.loc["philosophy", "diff"] == pytest.approx(0.0)
    head = rep.tables["headline"].set_index(["run", "config"])
    assert head.loc[("m1", "na_keyed"), "diff"] == pytest.approx(0.25)
    assert head.loc[("m1", "na_keyed"), "orig_only_correct"] == 1
    # 3 models < 5: no panel numbers, the reason instead
    panel = rep.tables["panel"].set_index("config")
    assert panel.loc["original", "n_models"] == 3
    assert math.isnan(panel.loc["original", "kr20"])
    assert panel.loc["original", "note"] == "needs ≥ 5 models"
    assert rep.tables["discrimination"].empty
    corr = rep.tables["correlations"].set_index("variant")
    assert corr.loc["na_keyed", "note"] == "needs ≥ 5 models"
    assert math.isnan(corr.loc["na_keyed", "pearson_r"])
    phr = rep.tables["phrasing"].set_index("run")
    assert phr.loc["m1", "spread"] == pytest.approx(0.25)


def test_panel_leaves_out_partial_runs() -> None:
    res = _results({("full1", "original"): [1, 0, 1, 0], ("full2", "original"): [0, 0, 1, 1],
                    ("part", "original"): [1, 1]}, ["anatomy"] * 4)  # fmt: skip
    p = make_panel(res, "original")
    assert p is not None and p.runs == ["full1", "full2"] and p.left_out == ["part"]
    p_all = make_panel(res, "original", min_coverage=0.5)
    assert p_all is not None and len(p_all.runs) == 3 and p_all.ids == ["i0", "i1"]


def test_category_of() -> None:
    assert category_of("college_physics") == "stem"
    assert category_of(None) == "non_mmlu"
    assert category_of("Physics (general)") == "non_mmlu"


def test_openai_style_completion_without_logprobs_fails_clearly() -> None:
    with pytest.raises(NabenchError, match="no log-probabilities"):
        _first_token_options(Completion(text="A"), 4, "openai")
    ok = _first_token_options(
        Completion(text="A", logprobs=(TokenLogprob("A", -0.1, (("A", -0.1), ("B", -2.0))),)),
        4,
        "openai",
    )
    assert ok[:2] == [-0.1, -2.0]
