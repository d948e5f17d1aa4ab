"""`nabench eval`: evaluate a built dataset with a model backend or a reference strategy.

Pipeline per config: load rows (``datasets.load_dataset``) → items → answers → parse →
score → write. Only the "answers" step differs between producers:

* a model (:class:`ModelProducer`): one request per row, all through
  :func:`nabench.llm.run_cached` with a :class:`~nabench.llm.ResponseCache` (batched,
  cached, resumable: a rerun makes 0 model calls, a killed run resumes);
* a reference strategy (:class:`StrategyProducer`, :mod:`nabench.evaluation.strategies`):
  one choice per item, rendered as the raw output ``"Answer: X"``.

Both hand raw outputs to :func:`score_outputs` and :func:`write_config_results`, which
write ``<out>/<run>/<config>.parquet`` (one row per item) and then
``<config>.summary.json`` (both atomically; the summary marks a finished config).
``run`` is the model slug, with ``__loglik`` appended for loglik runs.

Row kinds:

* ``mc``: NA builds (question, choices, answer). Generate: zero-shot CoT chat prompt,
  :func:`parse_answer`. Loglik: letter-only chat prompt, top-k log-probs of the first
  generated token.
* ``letter``: artifact configs with a letter ``target`` (full, choices_only, mem_*):
  the row's own ``prompt``/``stop`` as a raw completion prompt.
* ``prior``: artifact configs with ``choice_index`` (prior_choice*): one True/False
  prompt per option, scored per item with :func:`individual_prior_scores` (no option
  judged True is the "invalid" outcome and gets the invalid credit). Generate mode only.

Loglik scoring (:func:`option_logprobs`): each top-k token is stripped of whitespace and
of ``(``, ``)``, ``.``; tokens that are then exactly an option letter add their
probability to that letter (log-sum-exp, so ``"A"`` and ``" A"`` pool). The letters'
probabilities are renormalised over the options (letters outside the top-k count 0);
the prediction is the most probable option (ties: earliest) and ``confidence`` is its
renormalised probability. No option letter in the top-k is an invalid answer.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from nabench.core.atomic import atomic_file
from nabench.core.errors import NabenchError
from nabench.core.version import __version__
from nabench.evaluation.parsing import INVALID, parse_answers, parse_bool
from nabench.evaluation.prompts import (
    DEFAULT_LOGPROBS_K,
    DEFAULT_MAX_TOKENS,
    LETTERS,
    PROMPT_VERSION,
    Mode,
    artifact_request,
    mc_request,
)
from nabench.evaluation.scoring import (
    DEFAULT_INVALID_CREDIT,
    baseline_test,
    individual_prior_scores,
    majority_baseline,
    score_codes,
)
from nabench.evaluation.strategies import ItemBatch, Strategy, get_strategy
from nabench.llm import Backend, ChatRequest, Completion, ResponseCache, run_cached
from nabench.llm import write_json_atomic as _write_json_atomic
from nabench.llm.options import default_cache_path, make_backend
from nabench.stats.inference import accuracy_ci, json_safe

__all__ = [
    "NON_EVAL_CONFIGS",
    "ConfigResult",
    "EvalItems",
    "EvalOptions",
    "ModelProducer",
    "Produced",
    "StrategyProducer",
    "build_items",
    "evaluate_config",
    "model_slug",
    "option_logprobs",
    "renormalise",
    "run_eval",
    "score_outputs",
    "summarise",
    "write_config_results",
]

RowKind = Literal["mc", "letter", "prior"]
# Configs of built datasets that hold no evaluable items.
NON_EVAL_CONFIGS = ("excluded", "fewshot", "qi_step1")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_TOKEN_STRIP = " \t\n\r()."


def model_slug(model_id: str, mode: Mode = "generate") -> str:
    """Folder name of a run: the model id made path-safe, ``__loglik`` for loglik runs."""
    slug = _SLUG.sub("_", model_id).strip("_.") or "model"
    return f"{slug}__loglik" if mode == "loglik" else slug


# ----------------------------------------------------------------------------- items


@dataclass(frozen=True)
class EvalItems:
    """One config's rows, ready to produce answers for.

    ``batch`` has one entry per item. ``rows`` are the prompt rows: one per item for
    ``mc``/``letter``; one per (item, option) for ``prior``, with ``row_item`` mapping
    each row to its item position and ``row_option`` to its option index.
    """

    config: str
    kind: RowKind
    batch: ItemBatch
    subjects: tuple[str | None, ...]
    rows: pd.DataFrame
    row_item: NDArray[np.int64]
    row_option: NDArray[np.int64]

    @property
    def n_choices(self) -> NDArray[np.int64]:
        return np.fromiter((len(c) for c in self.batch.choices), np.int64, count=len(self.batch))


def _row_kind(config: str, df: pd.DataFrame) -> RowKind:
    if "prompt" not in df.columns:
        missing = {"id", "question", "choices", "answer"} - set(df.columns)
        if missing:
            raise NabenchError(f"config {config!r} lacks column(s) {sorted(missing)}")
        return "mc"
    if "target" not in df.columns or df["target"].isna().all():
        raise NabenchError(f"config {config!r} has no targets to score against (not evaluable)")
    if "choice_index" in df.columns and df["choice_index"].notna().all():
        return "prior"
    return "letter"


def _subjects(df: pd.DataFrame) -> tuple[str | None, ...]:
    if "subject" not in df.columns:
        return (None,) * len(df)
    return tuple(None if pd.isna(s) else str(s) for s in df["subject"])


def build_items(config: str, df: pd.DataFrame, limit: int | None = None) -> EvalItems:
    """Items of a config's rows (first ``limit`` items; for prior configs whole items)."""
    kind = _row_kind(config, df)
    if kind == "prior":
        item_ids = list(dict.fromkeys(df["item_id"].astype(str)))
        if limit is not None:
            keep = set(item_ids[:limit])
            item_ids = item_ids[:limit]
            df = df[df["item_id"].astype(str).isin(keep)]
        df = df.reset_index(drop=True)
        pos = {iid: i for i, iid in enumerate(item_ids)}
        first = df.drop_duplicates("item_id").set_index("item_id").loc[item_ids]
        choices = [tuple(str(c) for c in cs) for cs in first["choices"]]
        row_item = df["item_id"].astype(str).map(pos).to_numpy(np.int64)
        row_option = df["choice_index"].to_numpy(np.int64)
        counts = np.bincount(row_item, minlength=len(item_ids))
        want = np.array([len(c) for c in choices])
        if not np.array_equal(counts, want):
            raise NabenchError(f"config {config!r}: an item lacks one prompt per option")
        batch = ItemBatch.from_lists(item_ids, choices, first["answer"].to_numpy(np.int64))
        return EvalItems(
            config, kind, batch, _subjects(first.reset_index()), df, row_item, row_option
        )
    if limit is not None:
        df = df.iloc[:limit]
    df = df.reset_index(drop=True)
    ids = df["id"].astype(str).tolist()
    if len(set(ids)) != len(ids):
        raise NabenchError(f"config {config!r} has duplicate ids")
    choices = [tuple(str(c) for c in cs) for cs in df["choices"]]
    if kind == "mc":
        gold = df["answer"].to_numpy(np.int64)
    else:
        targets = df["target"].astype(str).str.strip().str.strip("()")
        bad = ~targets.isin(list(LETTERS))
        if bad.any():
            raise NabenchError(f"config {config!r}: target {targets[bad].iloc[0]!r} is no letter")
        gold = targets.map(LETTERS.index).to_numpy(np.int64)
    batch = ItemBatch.from_lists(ids, choices, gold)
    n = len(ids)
    return EvalItems(
        config, kind, batch, _subjects(df), df, np.arange(n), np.full(n, -1, dtype=np.int64)
    )


# ------------------------------------------------------------------------- producers


@dataclass
class Produced:
    """Raw answers for every prompt row of a config, plus what producing them cost."""

    raw_outputs: list[str]
    option_logprobs: list[list[float]] | None = None  # loglik: per row, one per option
    calls: int = 0
    cache_hits: int = 0
    elapsed_s: float = 0.0


class Producer(Protocol):
    @property
    def model_id(self) -> str: ...
    @property
    def backend_name(self) -> str: ...
    @property
    def mode(self) -> Mode: ...

    def produce(self, items: EvalItems) -> Produced: ...


@dataclass
class StrategyProducer:
    """Answers from a deterministic reference strategy (no model, no cache)."""

    strategy: Strategy
    backend_name: str = "reference"
    mode: Mode = "generate"

    @property
    def model_id(self) -> str:
        return self.strategy.model_id

    def produce(self, items: EvalItems) -> Produced:
        t0 = time.perf_counter()
        chosen = self.strategy.choose(items.batch)
        if items.kind == "prior":
            judged = chosen[items.row_item] == items.row_option
            raw = ["Answer: True" if j else "Answer: False" for j in judged.tolist()]
        else:
            raw = [f"Answer: {LETTERS[c]}" for c in chosen.tolist()]
        return Produced(raw, elapsed_s=time.perf_counter() - t0)


def option_logprobs(top: Sequence[tuple[str, float]], n_choices: int) -> list[float]:
    """Log-probability per option letter read from one position's top-k tokens.

    Tokens are stripped of whitespace, ``(``, ``)`` and ``.``; those that are then
    exactly one of the first ``n_choices`` uppercase letters pool into that letter by
    log-sum-exp. Letters not among the tokens get ``-inf``.
    """
    out = [-math.inf] * n_choices
    for token, lp in top:
        t = token.strip(_TOKEN_STRIP)
        if len(t) == 1 and t in LETTERS[:n_choices] and not math.isnan(lp):
            i = LETTERS.index(t)
            out[i] = float(np.logaddexp(out[i], lp))
    return out


def renormalise(logprobs: Sequence[float]) -> NDArray[np.float64] | None:
    """Probabilities over the options (softmax of the log-probs); None if all are -inf."""
    x = np.asarray(logprobs, dtype=np.float64)
    if x.size == 0 or not np.isfinite(x).any():
        return None
    m = x[np.isfinite(x)].max()
    w = np.exp(x - m)
    return w / w.sum()


@dataclass
class ModelProducer:
    """Answers from an LLM backend, every call through ``run_cached``."""

    backend: Backend
    cache: ResponseCache
    mode: Mode = "generate"
    max_tokens: int = DEFAULT_MAX_TOKENS
    logprobs_k: int = DEFAULT_LOGPROBS_K
    chunk_size: int = 32
    progress: bool = True

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def requests(self, items: EvalItems) -> list[ChatRequest]:
        if items.kind == "prior" and self.mode == "loglik":
            raise NabenchError(
                f"config {items.config!r}: loglik mode scores option letters; "
                "individual-prior (True/False) configs need --mode generate"
            )
        rows = items.rows
        if items.kind == "mc":
            return [
                mc_request(
                    str(q), [str(c) for c in cs], self.mode, self.max_tokens, self.logprobs_k
                )
                for q, cs in zip(rows["question"], rows["choices"], strict=True)
            ]
        return [
            artifact_request(
                str(p), None if pd.isna(s) else str(s), self.mode, self.max_tokens, self.logprobs_k
            )
            for p, s in zip(rows["prompt"], rows["stop"], strict=True)
        ]

    def produce(self, items: EvalItems) -> Produced:
        reqs = self.requests(items)
        comps, stats = run_cached(
            self.backend,
            reqs,
            self.cache,
            namespace=f"nabench-eval/{PROMPT_VERSION}",
            chunk_size=self.chunk_size,
            progress=self.progress,
        )
        failed = [c for c in comps if not c.ok]
        if failed:
            raise NabenchError(
                f"{len(failed)} of {len(comps)} request(s) failed on config {items.config!r} "
                f"(first: {failed[0].error}); finished ones are cached, rerun to retry"
            )
        raw = [c.text for c in comps]
        lps = None
        if self.mode == "loglik":
            n_choices = items.n_choices[items.row_item]
            lps = [
                _first_token_options(c, int(k), self.backend.name)
                for c, k in zip(comps, n_choices, strict=True)
            ]
        return Produced(raw, lps, stats.calls, stats.cache_hits, stats.elapsed_s)


def _first_token_options(comp: Completion, n_choices: int, backend: str) -> list[float]:
    if not comp.logprobs:
        raise NabenchError(
            f"the {backend!r} backend returned no log-probabilities; --mode loglik needs a "
            "backend/server that returns top log-probs of generated tokens (use --mode generate)"
        )
    return option_logprobs(comp.logprobs[0].top, n_choices)


# --------------------------------------------------------------------- parse + score


def _parse_letters(raw: Sequence[str], n_choices: NDArray[np.int64]) -> NDArray[np.int64]:
    codes = np.empty(len(raw), dtype=np.int64)
    values = np.asarray(raw, dtype=object)
    for k in np.unique(n_choices):
        sel = n_choices == k
        codes[sel] = parse_answers(values[sel].tolist(), int(k))
    return codes


def score_outputs(
    items: EvalItems,
    produced: Produced,
    model_id: str,
    invalid_credit: float = DEFAULT_INVALID_CREDIT,
) -> pd.DataFrame:
    """Parse and score raw outputs: the responses table (one row per item)."""
    batch = items.batch
    n = len(batch)
    if len(produced.raw_outputs) != len(items.rows):
        raise ValueError("one raw output per prompt row expected")
    n_choices = items.n_choices
    confidence = np.full(n, np.nan)
    extra: dict[str, Any] = {}
    if items.kind == "prior":
        judged = [parse_bool(t) for t in produced.raw_outputs]
        width = int(n_choices.max()) if n else 0
        matrix = np.zeros((n, width), dtype=bool)
        marks = np.full((n, width), "", dtype=object)
        for i, j, v in zip(items.row_item.tolist(), items.row_option.tolist(), judged, strict=True):
            matrix[i, j] = v is True
            marks[i, j] = "?" if v is None else ("T" if v else "F")
        scores = individual_prior_scores(matrix, batch.gold, empty_credit=invalid_credit)
        invalid = ~matrix.any(axis=1)
        parsed: list[str | None] = ["".join(m) for m in marks]
        correct = scores == 1.0
        by_item: list[list[str]] = [[] for _ in range(n)]
        order = np.lexsort((items.row_option, items.row_item))
        for r in order.tolist():
            by_item[items.row_item[r]].append(produced.raw_outputs[r])
        raw_col = [json.dumps(x, ensure_ascii=False) for x in by_item]
    else:
        if produced.option_logprobs is not None:
            codes = np.full(n, INVALID, dtype=np.int64)
            for i, lps in enumerate(produced.option_logprobs):
                probs = renormalise(lps)
                if probs is not None:
                    codes[i] = int(np.argmax(probs))
                    confidence[i] = float(probs[codes[i]])
            extra["option_logprobs"] = [list(map(float, x)) for x in produced.option_logprobs]
        else:
            codes = _parse_letters(produced.raw_outputs, n_choices)
        scores = score_codes(codes, batch.gold, invalid_credit)
        invalid = codes == INVALID
        parsed = [None if c == INVALID else LETTERS[c] for c in codes.tolist()]
        correct = codes == batch.gold
        raw_col = list(produced.raw_outputs)
    table = {
        "id": list(batch.ids),
        "config": [items.config] * n,
        "model": [model_id] * n,
        "subject": list(items.subjects),
        "raw_output": pd.Series(raw_col, dtype=object),
        "parsed": pd.Series(parsed, dtype=object),
        "gold": [LETTERS[g] for g in batch.gold.tolist()],
        "correct": np.asarray(correct, dtype=bool),
        "invalid": np.asarray(invalid, dtype=bool),
        "score": np.asarray(scores, dtype=np.float64),
        "confidence": confidence,
        "n_choices": n_choices,
        **extra,
    }
    return pd.DataFrame(table)


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

    ``ci_low``/``ci_high``: Wilson 95 % when every score is 0 or 1, otherwise the
    percentile bootstrap (2,000 resamples, seed 0), as ``ci_method`` says; both are kept.
    ``majority_baseline``: share of the most frequent gold letter; the gain over it is
    tested one-sided with :func:`baseline_test` (binomial, or t for partial credit).
    """
    n = len(responses)
    if n == 0:
        raise NabenchError(f"config {config!r}: no items to evaluate")
    scores = responses["score"].to_numpy(np.float64)
    ci = accuracy_ci(scores)
    binary = bool(np.all((scores == 0.0) | (scores == 1.0)))
    base = majority_baseline(responses["gold"].tolist())
    test = baseline_test(scores, base)
    conf = responses["confidence"].to_numpy(np.float64)
    return {
        "model": model_id,
        "run": run,
        "backend": backend,
        "mode": mode,
        "config": config,
        "kind": kind,
        "n": n,
        **ci.fields(binary),
        "confidence_level": ci.confidence,
        "n_correct": int(responses["correct"].sum()),
        "invalid_rate": float(responses["invalid"].mean()),
        "invalid_credit": float(invalid_credit),
        "majority_baseline": base,
        "gain_over_majority": ci.accuracy - base,
        "baseline_p_value": test.p_value,
        "baseline_test": test.method,
        "mean_confidence": float(np.nanmean(conf)) if np.isfinite(conf).any() else None,
        "calls": produced.calls,
        "cache_hits": produced.cache_hits,
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
    _write_json_atomic(json_safe(summary), summary_path)
    return parquet, summary_path


# -------------------------------------------------------------------------- pipeline


@dataclass
class ConfigResult:
    config: str
    summary: dict[str, Any]
    parquet: Path
    summary_path: Path


def evaluate_config(
    items: EvalItems,
    producer: Producer,
    run_dir: Path,
    invalid_credit: float = DEFAULT_INVALID_CREDIT,
    meta: dict[str, Any] | None = None,
) -> ConfigResult:
    """Answers → parse → score → write for one config (the one code path of every run)."""
    produced = producer.produce(items)
    responses = score_outputs(items, produced, producer.model_id, invalid_credit)
    summary = summarise(
        responses,
        config=items.config,
        model_id=producer.model_id,
        run=run_dir.name,
        backend=producer.backend_name,
        mode=producer.mode,
        invalid_credit=invalid_credit,
        produced=produced,
        kind=items.kind,
        meta=meta,
    )
    parquet, summary_path = write_config_results(responses, summary, run_dir)
    return ConfigResult(items.config, summary, parquet, summary_path)


@dataclass
class EvalOptions:
    """Everything `nabench eval` takes."""

    dataset: str
    backend: str
    model: str | None = None
    configs: Sequence[str] = ()
    mode: Mode = "generate"
    split: str | None = None
    revision: str | None = None
    limit: int | None = None
    out: Path = Path("results")
    invalid_credit: float = DEFAULT_INVALID_CREDIT
    cache: Path | None = None
    base_url: str | None = None
    concurrency: int = 8
    max_tokens: int = DEFAULT_MAX_TOKENS
    logprobs_k: int = DEFAULT_LOGPROBS_K
    chunk_size: int = 32
    progress: bool = True
    backend_options: dict[str, Any] = field(default_factory=dict)


def eval_configs(dataset: str, revision: str | None, requested: Sequence[str]) -> list[str]:
    """The configs to evaluate: ``requested``, or every evaluable config of the dataset."""
    import datasets

    try:
        names = datasets.get_dataset_config_names(dataset, revision=revision)
    except Exception as exc:
        raise NabenchError(f"cannot read the configs of {dataset!r}: {exc}") from exc
    if requested:
        unknown = [c for c in requested if c not in names]
        if unknown:
            raise NabenchError(
                f"unknown config(s) {unknown} in {dataset!r}; available: {', '.join(names)}"
            )
        return list(requested)
    return [c for c in names if c not in NON_EVAL_CONFIGS]


def load_rows(dataset: str, config: str, split: str | None, revision: str | None) -> pd.DataFrame:
    """One config's split as a DataFrame (``test`` by default, or the only split)."""
    import datasets

    dd = datasets.load_dataset(dataset, config, revision=revision)
    splits = list(dd)
    if split is None:
        if "test" in dd:
            split = "test"
        elif len(splits) == 1:
            split = splits[0]
        else:
            raise NabenchError(f"config {config!r} has splits {splits}; choose one with --split")
    if split not in dd:
        raise NabenchError(f"config {config!r} has no split {split!r} (has {splits})")
    return dd[split].to_pandas()


def run_eval(options: EvalOptions) -> list[ConfigResult]:
    """Evaluate every selected config; returns one result per config."""

    if not 0.0 <= options.invalid_credit <= 1.0:
        raise NabenchError("--invalid-credit must be in [0, 1]")
    configs = eval_configs(options.dataset, options.revision, options.configs)
    producer: Producer
    cache: ResponseCache | None = None
    backend: Backend | None = None
    if options.backend == "reference":
        if options.mode != "generate":
            raise NabenchError("reference strategies have no log-probabilities: --mode generate")
        if not options.model:
            raise NabenchError("--backend reference needs --model (a strategy name)")
        producer = StrategyProducer(get_strategy(options.model))
    else:
        backend = make_backend(
            options.backend,
            options.model,
            options.base_url,
            options.concurrency,
            options.backend_options,
        )
        cache = ResponseCache(options.cache or default_cache_path())
        producer = ModelProducer(
            backend,
            cache,
            options.mode,
            options.max_tokens,
            options.logprobs_k,
            options.chunk_size,
            options.progress,
        )
    run_dir = Path(options.out) / model_slug(producer.model_id, options.mode)
    meta = {
        "dataset": options.dataset,
        "revision": options.revision,
        "split": options.split,
        "limit": options.limit,
        "max_tokens": options.max_tokens if options.mode == "generate" else 1,
        "logprobs_k": options.logprobs_k if options.mode == "loglik" else None,
    }
    results = []
    try:
        for config in configs:
            df = load_rows(options.dataset, config, options.split, options.revision)
            items = build_items(config, df, options.limit)
            results.append(evaluate_config(items, producer, run_dir, options.invalid_credit, meta))
    finally:
        if cache is not None:
            cache.close()
        if backend is not None:
            backend.close()
    return results
