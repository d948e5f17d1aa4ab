"""Parse, score and write one config's answers: ``<run>/<config>.parquet`` (one row per
item, with the raw output beside the parsed letter) and then ``<config>.summary.json``
(both atomically, mode 0644; the summary marks a finished config)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from nabench.core.atomic import atomic_file
from nabench.core.errors import NabenchError
from nabench.core.version import __version__
from nabench.evaluation.answer_rules import authors_prefix_code
from nabench.evaluation.items import EvalItems, RowKind
from nabench.evaluation.parsing import INVALID, parse_answers, parse_bool
from nabench.evaluation.producers import Produced, renormalise, selected_token_confidence
from nabench.evaluation.prompts import LETTERS, PROMPT_VERSION, Mode
from nabench.evaluation.scoring import (
    DEFAULT_INVALID_CREDIT,
    baseline_test,
    individual_prior_scores,
    majority_baseline,
    score_codes,
)
from nabench.llm import write_json_atomic
from nabench.schemas.protocol import ScoringPreset
from nabench.stats.inference import accuracy_ci, json_safe, score_fields

__all__ = ["score_outputs", "summarise", "write_config_results"]


def _parse_letters(
    raw: Sequence[str], n_choices: NDArray[np.int64], scoring: ScoringPreset | None = None
) -> NDArray[np.int64]:
    if scoring is not None and scoring.answer_rule == "authors_prefix":
        window = scoring.answer_window
        pairs = zip(raw, n_choices.tolist(), strict=True)
        return np.fromiter(
            (authors_prefix_code(t, int(k), window) for t, k in pairs), np.int64, len(raw)
        )
    codes = np.empty(len(raw), dtype=np.int64)
    values = np.asarray(raw, dtype=object)
    for k in np.unique(n_choices):
        sel = n_choices == k
        codes[sel] = parse_answers(values[sel].tolist(), int(k))
    return codes


@dataclass(frozen=True)
class _Scored:
    """One config's answers scored by its rule: per item, the parsed answer, scores and the
    raw output column; `extra`: columns only some producers give."""

    parsed: list[str | None]
    scores: NDArray[np.float64]
    correct: NDArray[np.bool_]
    invalid: NDArray[np.bool_]
    confidence: NDArray[np.float64]
    raw: list[Any]
    extra: dict[str, Any] = field(default_factory=dict)


def score_outputs(
    items: EvalItems,
    produced: Produced,
    model_id: str,
    invalid_credit: float = DEFAULT_INVALID_CREDIT,
    scoring: ScoringPreset | None = None,
) -> pd.DataFrame:
    """Parse and score raw outputs: the responses table (one row per item).

    ``scoring`` (a protocol's) picks the answer rule; with per-token log-probs
    (``produced.token_logprobs``) ``confidence`` is the renormalised top-k share of the
    selected letter at its answer token and ``confidence_selected_token`` that token's
    probability (see `selected_token_confidence`).
    """
    batch = items.batch
    n = len(batch)
    if len(produced.raw_outputs) != len(items.rows):
        raise ValueError("one raw output per prompt row expected")
    if items.kind == "prior":
        scored = _score_prior(items, produced, invalid_credit)
    else:
        scored = _score_letters(items, produced, invalid_credit, scoring)
    table = {
        "id": list(batch.ids),
        "source_id": list(items.source_ids or batch.ids),
        "config": [items.config] * n,
        "model": [model_id] * n,
        "subject": list(items.subjects),
        "raw_output": pd.Series(scored.raw, dtype=object),
        "parsed": pd.Series(scored.parsed, dtype=object),
        "gold": [LETTERS[g] for g in batch.gold.tolist()],
        "correct": np.asarray(scored.correct, dtype=bool),
        "invalid": np.asarray(scored.invalid, dtype=bool),
        "score": np.asarray(scored.scores, dtype=np.float64),
        "confidence": scored.confidence,
        "n_choices": items.n_choices,
        **scored.extra,
    }
    if items.not_asked is not None:
        table["not_asked"] = np.asarray(items.not_asked, dtype=bool)
    return pd.DataFrame(table)


def _score_prior(items: EvalItems, produced: Produced, invalid_credit: float) -> _Scored:
    """Individual-prior prompts: one true/false judgement per option; the item's answer is
    the set of options judged true (marks T/F/? per option, the raw outputs per item)."""
    batch, n = items.batch, len(items.batch)
    judged = [parse_bool(t) for t in produced.raw_outputs]
    width = int(items.n_choices.max()) if n else 0
    matrix = np.zeros((n, width), dtype=bool)
    marks = np.full((n, width), "", dtype=object)
    for i, j, v in zip(items.row_item.tolist(), items.row_option.tolist(), judged, strict=True):
        matrix[i, j] = v is True
        marks[i, j] = "?" if v is None else ("T" if v else "F")
    scores = individual_prior_scores(matrix, batch.gold, empty_credit=invalid_credit)
    by_item: list[list[str]] = [[] for _ in range(n)]
    for r in np.lexsort((items.row_option, items.row_item)).tolist():
        by_item[items.row_item[r]].append(produced.raw_outputs[r])
    return _Scored(
        parsed=["".join(m) for m in marks],
        scores=scores,
        correct=scores == 1.0,
        invalid=~matrix.any(axis=1),
        confidence=np.full(n, np.nan),
        raw=[json.dumps(x, ensure_ascii=False) for x in by_item],
    )


def _score_letters(
    items: EvalItems, produced: Produced, invalid_credit: float, scoring: ScoringPreset | None
) -> _Scored:
    """One answer letter per item: the most likely option (log-likelihood mode) or the
    letter parsed from the output, with its confidence where log-probs were given."""
    batch, n, n_choices = items.batch, len(items.batch), items.n_choices
    confidence = np.full(n, np.nan)
    extra: dict[str, Any] = {}
    if produced.option_logprobs is not None:
        codes = np.full(n, INVALID, dtype=np.int64)
        for i, lps in enumerate(produced.option_logprobs):
            probs = renormalise(lps)
            if probs is not None:
                codes[i] = int(np.argmax(probs))
                confidence[i] = float(probs[codes[i]])
        extra["option_logprobs"] = [list(map(float, x)) for x in produced.option_logprobs]
    else:
        codes = _parse_letters(produced.raw_outputs, n_choices, scoring)
        if produced.token_logprobs is not None:
            token_p = np.full(n, np.nan)
            for i, (toks, c) in enumerate(zip(produced.token_logprobs, codes, strict=True)):
                letter = None if c == INVALID else LETTERS[int(c)]
                token_p[i], confidence[i] = selected_token_confidence(
                    toks, letter, int(n_choices[i])
                )
            extra["confidence_selected_token"] = token_p
    if items.not_asked is not None:
        # No question to ask (qi_step2 without an inferred question): never an answer,
        # whatever a strategy or model produced; scored as invalid, as the authors do.
        codes[items.not_asked] = INVALID
        confidence[items.not_asked] = np.nan
    return _Scored(
        parsed=[None if c == INVALID else LETTERS[c] for c in codes.tolist()],
        scores=score_codes(codes, batch.gold, invalid_credit),
        correct=codes == batch.gold,
        invalid=codes == INVALID,
        confidence=confidence,
        raw=list(produced.raw_outputs),
        extra=extra,
    )


def summarise(
    responses: pd.DataFrame,
    *,
    config: str,
    model_id: str,
    run: str,
    backend: str,
    mode: Mode,
    invalid_credit: float,
    produced: Produced,
    kind: RowKind = "mc",
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary JSON of one (run, config).

    ``accuracy``: the share of correct answers (an invalid answer is wrong), with its
    Wilson 95 % interval (``ci_low``/``ci_high``; the bootstrap one kept beside it).
    ``score``: the mean item score, where an invalid answer earns ``invalid_credit``
    (``score_ci_low``/``score_ci_high``: Wilson for 0/1 scores, else percentile bootstrap,
    2,000 resamples, seed 0). ``majority_baseline``: share of the most frequent gold
    letter; the accuracy's gain over it is tested one-sided (exact binomial).
    """
    n = len(responses)
    if n == 0:
        raise NabenchError(f"config {config!r}: no items to evaluate")
    # Accuracy is strict (share correct, an invalid answer is wrong); the mean score with
    # the invalid credit is the separate `score` (the artifacts paper's metric).
    correct = responses["correct"].to_numpy(np.float64)
    ci = accuracy_ci(correct)
    base = majority_baseline(responses["gold"].tolist())
    test = baseline_test(correct, base)
    conf = responses["confidence"].to_numpy(np.float64)
    return {
        "model": model_id,
        "run": run,
        "backend": backend,
        "mode": mode,
        "config": config,
        "kind": kind,
        "n": n,
        **ci.fields(True),
        "confidence_level": ci.confidence,
        "n_correct": int(responses["correct"].sum()),
        **score_fields(responses["score"].to_numpy(np.float64)),
        "invalid_rate": float(responses["invalid"].mean()),
        "invalid_credit": float(invalid_credit),
        "not_asked": int(responses["not_asked"].sum()) if "not_asked" in responses else 0,
        "majority_baseline": base,
        "gain_over_majority": ci.accuracy - base,
        "baseline_p_value": test.p_value,
        "baseline_test": test.method,
        "mean_confidence": float(np.nanmean(conf)) if np.isfinite(conf).any() else None,
        "calls": produced.calls,
        "cache_hits": produced.cache_hits,
        "retries": produced.retries,
        "errors": produced.errors,
        "answer_seconds": produced.elapsed_s,
        "prompt_version": PROMPT_VERSION,
        "nabench_version": __version__,
        **(meta or {}),
    }


def _write_parquet_atomic(df: pd.DataFrame, path: Path) -> None:
    with atomic_file(path) as tmp:
        df.to_parquet(tmp, index=False)


def write_config_results(
    responses: pd.DataFrame, summary: dict[str, Any], run_dir: Path
) -> tuple[Path, Path]:
    """Write ``<config>.parquet`` then ``<config>.summary.json`` into ``run_dir``."""
    config = summary["config"]
    parquet = run_dir / f"{config}.parquet"
    summary_path = run_dir / f"{config}.summary.json"
    _write_parquet_atomic(responses, parquet)
    write_json_atomic(json_safe(summary), summary_path)
    return parquet, summary_path
