"""`nabench eval --protocol NAME`: a paper's preset sets the prompt, decoding, answer rule,
invalid-answer score and confidence, and the run records which preset it followed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.evaluation.producers import selected_token_confidence
from nabench.evaluation.prompts import DEFAULT_LOGPROBS_K, artifact_request, mc_request
from nabench.evaluation.scoring import DEFAULT_INVALID_CREDIT
from nabench.llm import TokenLogprob
from nabench.schemas.protocol import get_protocol

Q, CHOICES = "Which planet is largest?", ["Mars", "Jupiter", "Venus", "None of the above"]


def _eval(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, ["eval", *args])
    assert (result.exit_code == 0) == ok, result.output
    return result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("mmlu12") / "mmlu-na"
    result = CliRunner().invoke(
        main,
        ["build", "mmlu-na", "--source", str(mmlu_dir), "--labels", "none", "--limit", "12",
         "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_the_nabench_preset_is_what_eval_does_without_one() -> None:
    """Same request (so the same cache key) and the same invalid-answer score."""
    nabench = get_protocol("nabench")
    assert nabench.decoding is not None and nabench.scoring is not None
    with_preset = mc_request(Q, CHOICES, "generate", decoding=nabench.decoding)
    assert with_preset == mc_request(Q, CHOICES, "generate")
    assert nabench.scoring.invalid_score == DEFAULT_INVALID_CREDIT == 0.25


def test_paper_presets_shape_the_requests() -> None:
    na = get_protocol("na-paper")
    request = mc_request(Q, CHOICES, "generate", decoding=na.decoding, logprobs=True)
    assert (request.temperature, request.top_p, request.max_tokens) == (0.0, 1.0, 1024)
    assert request.logprobs == DEFAULT_LOGPROBS_K  # per generated token: the confidence
    assert request.messages is not None and "Think step by step" in request.messages[-1][1]
    paper = get_protocol("artifacts-paper")
    prompt = "Question: q\nChoices:\n(A) x\n(B) y\nAnswer:"
    request = artifact_request(prompt, "\n", "generate", decoding=paper.decoding)
    assert (request.min_tokens, request.max_tokens, request.prompt) == (5, 200, prompt)
    assert request.logprobs is None


def test_selected_token_confidence_reads_the_answer_token() -> None:
    log = math.log
    top = ((" D", log(0.6)), (" C", log(0.2)), ("D", log(0.1)), (" the", log(0.05)))
    answer = (TokenLogprob("Answer", log(0.9), ()), TokenLogprob(":", log(0.95), ()))
    tokens = (*answer, TokenLogprob(" D", log(0.6), top))
    p, share = selected_token_confidence(tokens, "D", 4)
    assert p == pytest.approx(0.6)
    assert share == pytest.approx((0.6 + 0.1) / (0.6 + 0.1 + 0.2))  # " D" and "D" pool
    # A discussion naming other letters first: the last token reading "D" counts.
    early = TokenLogprob(" A", log(0.3), ((" A", log(0.3)), (" D", log(0.3))))
    assert selected_token_confidence((early, *tokens), "D", 4)[0] == pytest.approx(0.6)
    for args in ((tokens, None, 4), (None, "D", 4), (answer, "D", 4)):
        assert all(math.isnan(x) for x in selected_token_confidence(*args))  # type: ignore[arg-type]


def _run(out: Path, name: str) -> tuple[dict[str, Any], dict[str, Any], pd.DataFrame]:
    run = out / name
    settings = json.loads((run / "run.json").read_text())["settings"]
    summary = json.loads((run / "original.summary.json").read_text())
    return settings, summary, pd.read_parquet(run / "original.parquet")


def test_a_preset_is_recorded_and_scores_with_its_rule(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    common = [str(built), "--config", "original", "--backend", "reference", "--model", "oracle",
              "--out", str(out), "--quiet"]  # fmt: skip
    _eval(*common, "--protocol", "artifacts-paper", "--run-name", "paper")
    settings, summary, rows = _run(out, "paper")
    assert settings["protocol"]["name"] == "artifacts-paper"
    assert settings["protocol"]["scoring"]["answer_rule"] == "authors_prefix"
    assert (settings["invalid_credit"], settings["max_tokens"]) == (0.25, 200)
    assert summary["protocol"] == "artifacts-paper" and summary["invalid_credit"] == 0.25
    # the oracle's choices, written as the authors' rule reads them, all count
    assert summary["accuracy"] == 1.0 and set(rows["raw_output"].str[:1]) == {"("}
    _eval(*common, "--run-name", "plain")
    settings, summary, _ = _run(out, "plain")
    assert "protocol" not in settings and "protocol" not in summary
    # the same folder with another preset is another run: refused
    msg = _eval(*common, "--protocol", "na-paper", "--run-name", "paper", ok=False)
    assert "holds a run with other settings" in msg


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--protocol", "na-paper", "--max-tokens", "8"], "--protocol na-paper sets --max-tokens"),
        (["--protocol", "artifacts-paper", "--invalid-credit", "0"], "sets --invalid-credit"),
        (["--protocol", "na-paper", "--mode", "loglik"], "sets --mode itself"),
        (["--protocol", "line-of-duty"], "'line-of-duty' applies to build, not eval"),
        (["--protocol", "no-such-paper"], "unknown protocol 'no-such-paper'"),
    ],
)
def test_preset_conflicts_are_refused(
    built: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "res"
    msg = _eval(str(built), "--backend", "reference", "--model", "oracle", "--out", str(out),
                *extra, ok=False)  # fmt: skip
    assert message in msg and "Traceback" not in msg
    assert not out.exists()


@pytest.mark.slow
def test_na_paper_decoding_on_the_real_model_yields_per_token_confidence(
    built: Path, tmp_path: Path
) -> None:
    """The na-paper decoding with per-token log-probs through the real local backend, bounded
    to 48 new tokens (its 1,024 take minutes per item on two CPUs): every generated token
    comes back with its top-k, and the scorer reads both confidences from them."""
    from nabench.evaluation.items import build_items
    from nabench.evaluation.outputs import score_outputs
    from nabench.evaluation.producers import ModelProducer
    from nabench.llm import ResponseCache
    from nabench.llm.options import open_backend
    from nabench.schemas.model import ModelSpec

    na = get_protocol("na-paper")
    assert na.decoding is not None and na.scoring is not None
    df = pd.read_parquet(next((built / "original").glob("test-*.parquet")))
    items = build_items("original", df, limit=3)
    backend = open_backend(ModelSpec(options={"n_threads": 2}))
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        producer = ModelProducer(
            backend,
            cache,
            decoding=na.decoding.model_copy(update={"max_tokens": 48}),
            token_logprobs=True,
            progress=False,
        )
        produced = producer.produce(items)
    backend.close()
    assert produced.calls == 3 and produced.token_logprobs is not None
    for tokens in produced.token_logprobs:
        assert tokens and all(1 <= len(t.top) <= DEFAULT_LOGPROBS_K for t in tokens)
    rows = score_outputs(items, produced, backend.model_id, na.scoring.invalid_score, na.scoring)
    for _, row in rows.iterrows():
        token_p, share = row["confidence_selected_token"], row["confidence"]
        if row["invalid"] or math.isnan(token_p):
            assert math.isnan(share)
        else:
            assert 0.0 < token_p <= 1.0 and 0.0 < share <= 1.0
