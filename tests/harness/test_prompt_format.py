"""`nabench eval --prompt-format lm-eval`: the harness's prompt byte for byte, the letters read
as the harness's continuations (" A", not pooled with "A"), and the flag's rules."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.core.errors import NabenchError
from nabench.evaluation.prompts import mc_request
from nabench.evaluation.run_identity import RUN_FILE, resolve_run_dir, write_settings
from nabench.evaluation.runner import model_slug, option_logprobs
from nabench.llm import ChatRequest


def test_prompt_is_the_one_lm_eval_renders_from_the_build(
    mmlu_na: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lm_eval.tasks import TaskManager

    monkeypatch.chdir(mmlu_na)  # a build's tasks read its parquet relative to the build

    # the build's tasks alone (indexing lm-eval's own takes ~15 s); the lm-eval CLI tests
    # (test_external_results, test_lm_eval_validate_finds_both_groups) load them too
    tm = TaskManager(include_path=str(mmlu_na / "lm_eval"), include_defaults=False)
    for config in ("na_keyed", "all_of_the_above"):
        task = tm.load(f"nabench_mmlu_na_{config}")["tasks"][f"nabench_mmlu_na_{config}"]
        rows = pq.read_table(mmlu_na / config / "test-00000-of-00001.parquet").to_pylist()
        for doc, row in zip(list(task.test_docs())[:10], rows[:10], strict=True):
            req = mc_request(row["question"], row["choices"], "loglik", prompt_format="lm-eval")
            assert req.prompt == task.doc_to_text(doc)
            assert (req.max_tokens, req.min_tokens, req.messages) == (1, 1, None)
            # the harness scores target_delimiter + choice after that prompt
            assert [task.config.target_delimiter + c for c in task.doc_to_choice(doc)] == [
                " " + letter for letter in "ABCDE"[: len(row["choices"])]
            ]


def test_letters_are_the_exact_continuations() -> None:
    top = [(" A", -1.0), ("A", -0.5), (" B", -2.0), ("B.", -0.1), (" C ", -0.2), ("\n", -0.3)]
    got = option_logprobs(top, 4, exact_prefix=" ")
    assert got[:2] == [-1.0, -2.0] and got[2:] == [-math.inf, -math.inf]
    pooled = option_logprobs(top, 4)  # nabench's own format pools every spelling
    assert math.isclose(pooled[0], math.log(math.exp(-1.0) + math.exp(-0.5)))
    assert model_slug("m/x", "loglik", "lm-eval") == "m_x__lm-eval"


def test_min_tokens_keeps_old_cache_keys() -> None:
    plain = ChatRequest(prompt="Q\nAnswer:", max_tokens=1, logprobs=5)
    assert "min_tokens" not in plain.canonical_json()
    assert (
        '"min_tokens":1'
        in ChatRequest(prompt="Q\nAnswer:", max_tokens=1, logprobs=5, min_tokens=1).canonical_json()
    )


def test_lm_eval_format_refuses_generation_and_reference(mmlu_na: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["eval", str(mmlu_na), "--config", "original", "--limit", "2", "--out", str(tmp_path)]
    res = runner.invoke(main, [*common, "--prompt-format", "lm-eval", "--mode", "generate",
                               "--backend", "reference", "--model", "always-a"])  # fmt: skip
    assert res.exit_code != 0
    assert "--prompt-format lm-eval is scored by log-probabilities" in res.output
    assert "Traceback" not in res.output


def test_prompt_format_is_part_of_the_run_identity(tmp_path: Path) -> None:
    base = {"model": "m", "backend": "openai", "endpoint": "http://x/v1", "mode": "loglik"}
    harness = {**base, "prompt_format": "lm-eval"}
    # a run recorded before --prompt-format existed: nabench's prompts
    legacy = tmp_path / "m__loglik"
    write_settings(legacy, base)
    assert "prompt_format" not in (legacy / RUN_FILE).read_text()
    assert resolve_run_dir(tmp_path, "m__loglik", "m__loglik", {**base, "prompt_format": "nabench"})
    with pytest.raises(NabenchError, match="prompt_format: 'nabench' → 'lm-eval'"):
        resolve_run_dir(tmp_path, "m__loglik", "m__loglik", harness)
    # without a name the lm-eval run gets its own folder, never the nabench run's
    default = model_slug("m", "loglik", "lm-eval")
    assert resolve_run_dir(tmp_path, None, default, harness) == tmp_path / "m__lm-eval"
    assert resolve_run_dir(tmp_path, None, "m__loglik", harness) == tmp_path / "m__loglik__openai"
