"""Producers of raw answers: a model backend (cached, resumable) or a reference strategy.

* a model (:class:`ModelProducer`): one request per row, all through
  :func:`nabench.llm.run_cached` with a :class:`~nabench.llm.ResponseCache` (batched,
  cached, resumable: a rerun makes 0 model calls, a killed run resumes). The cache
  namespace holds the prompt version, the backend and its endpoint, so an ``openai`` run
  against a server is never answered from a ``local`` run's cache of the same model id.
* a reference strategy (:class:`StrategyProducer`, :mod:`nabench.evaluation.strategies`):
  one choice per item, rendered as the raw output ``"Answer: X"``.

Loglik scoring (:func:`option_logprobs`): each top-k token is stripped of whitespace and
of ``(``, ``)``, ``.``; tokens that are then exactly an option letter add their
probability to that letter (log-sum-exp, so ``"A"`` and ``" A"`` pool). The letters'
probabilities are renormalised over the options (letters outside the top-k count 0);
the prediction is the most probable option (ties: earliest) and ``confidence`` is its
renormalised probability. No option letter in the top-k is an invalid answer. In the
``lm-eval`` prompt format only the tokens ``" A"``, ``" B"``, … count (the harness's
continuations: its target delimiter ``" "`` + letter), nothing is pooled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from nabench.core.errors import NabenchError
from nabench.core.redact import mask_url
from nabench.evaluation.items import EvalItems
from nabench.evaluation.prompts import (
    DEFAULT_LOGPROBS_K,
    DEFAULT_MAX_TOKENS,
    HARNESS_DELIMITER,
    LETTERS,
    PROMPT_VERSION,
    Mode,
    PromptFormat,
    artifact_request,
    mc_request,
)
from nabench.evaluation.strategies import Strategy
from nabench.llm import (
    Backend,
    ChatRequest,
    Completion,
    ResponseCache,
    TokenLogprob,
    run_cached,
)
from nabench.schemas.protocol import DecodingPreset

__all__ = [
    "ModelProducer",
    "Produced",
    "Producer",
    "StrategyProducer",
    "backend_endpoint",
    "option_logprobs",
    "renormalise",
    "selected_token_confidence",
]

_TOKEN_STRIP = " \t\n\r()."


def backend_endpoint(backend: Backend) -> str:
    """Where a backend's answers come from: the server URL (credentials masked: it is
    recorded in run.json and every summary), or ``in-process``."""
    url = getattr(backend, "base_url", None)
    return mask_url(str(url)) if url else "in-process"


@dataclass
class Produced:
    """Raw answers for every prompt row of a config, plus what producing them cost."""

    raw_outputs: list[str]
    option_logprobs: list[list[float]] | None = None  # loglik: per row, one per option
    calls: int = 0
    cache_hits: int = 0
    elapsed_s: float = 0.0
    retries: int = 0  # transport retries the backend made (5xx, timeouts)
    errors: int = 0
    # generate mode with per-token log-probs (a protocol's `selected_token_probability`)
    token_logprobs: list[tuple[TokenLogprob, ...] | None] | None = None


class Producer(Protocol):
    @property
    def model_id(self) -> str: ...
    @property
    def backend_name(self) -> str: ...
    @property
    def model_revision(self) -> str | None: ...
    @property
    def mode(self) -> Mode: ...

    def produce(self, items: EvalItems) -> Produced: ...


@dataclass
class StrategyProducer:
    """Answers from a deterministic reference strategy (no model, no cache)."""

    strategy: Strategy
    backend_name: str = "reference"
    mode: Mode = "generate"
    # How a choice is written: the form the run's answer rule reads ("(A)" for the
    # artifacts authors' rule, which reads only "(L)" in the first characters).
    answer_format: str = "Answer: {}"

    @property
    def model_id(self) -> str:
        return self.strategy.model_id

    @property
    def model_revision(self) -> str | None:
        return None  # a strategy has no weights

    def produce(self, items: EvalItems) -> Produced:
        t0 = time.perf_counter()
        chosen = self.strategy.choose(items.batch)
        if items.kind == "prior":
            judged = chosen[items.row_item] == items.row_option
            raw = ["Answer: True" if j else "Answer: False" for j in judged.tolist()]
        else:
            raw = [self.answer_format.format(LETTERS[c]) for c in chosen.tolist()]
        return Produced(raw, elapsed_s=time.perf_counter() - t0)


def option_logprobs(
    top: Sequence[tuple[str, float]], n_choices: int, exact_prefix: str | None = None
) -> list[float]:
    """Log-probability per option letter read from one position's top-k tokens.

    Tokens are stripped of whitespace, ``(``, ``)`` and ``.``; those that are then
    exactly one of the first ``n_choices`` uppercase letters pool into that letter by
    log-sum-exp. Letters not among the tokens get ``-inf``. With ``exact_prefix`` (the
    lm-eval format: ``" "``) only the tokens ``exact_prefix + letter`` count, nothing is
    pooled: the harness scores exactly that continuation.
    """
    out = [-math.inf] * n_choices
    for token, lp in top:
        if exact_prefix is not None:
            if not token.startswith(exact_prefix):
                continue
            t = token[len(exact_prefix) :]
        else:
            t = token.strip(_TOKEN_STRIP)
        if len(t) == 1 and t in LETTERS[:n_choices] and not math.isnan(lp):
            i = LETTERS.index(t)
            out[i] = float(np.logaddexp(out[i], lp))
    return out


def selected_token_confidence(
    tokens: Sequence[TokenLogprob] | None, letter: str | None, n_choices: int
) -> tuple[float, float]:
    """(token probability, renormalised top-k share) of the selected option ``letter`` at
    the last generated token that reads as that letter (stripped as in `option_logprobs`):
    the NA study's confidence, and nabench's renormalised value at the same position.
    NaN for both where the output holds no such token (or no log-probs came back)."""
    if not tokens or letter is None:
        return math.nan, math.nan
    for tok in reversed(tokens):
        if tok.token.strip(_TOKEN_STRIP) == letter:
            probs = renormalise(option_logprobs(tok.top, n_choices))
            share = math.nan if probs is None else float(probs[LETTERS.index(letter)])
            return math.exp(tok.logprob), share
    return math.nan, math.nan


def renormalise(logprobs: Sequence[float]) -> NDArray[np.float64] | None:
    """Probabilities over the options (softmax of the log-probs); None (an invalid answer)
    if all are -inf, or if any is NaN or +inf: no log-probability (a +inf from a server
    became probability NaN and argmax picked its option as the answer)."""
    x = np.asarray(logprobs, dtype=np.float64)
    if x.size == 0 or not np.isfinite(x).any() or np.isnan(x).any() or np.isposinf(x).any():
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
    prompt_format: PromptFormat = "nabench"
    decoding: DecodingPreset | None = None  # a protocol's decoding (generate mode)
    token_logprobs: bool = False  # per-token top-k log-probs of each generation

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def model_revision(self) -> str | None:
        """Which weights answer (`Backend.revision`: a content fingerprint, or None)."""
        return self.backend.revision

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def namespace(self) -> str:
        """Cache namespace: prompt version, backend and endpoint (see module docstring)."""
        return (
            f"nabench-eval/{PROMPT_VERSION}|backend={self.backend.name}"
            f"|endpoint={backend_endpoint(self.backend)}"
        )

    def requests(self, items: EvalItems) -> list[ChatRequest]:
        if items.kind == "prior" and self.mode == "loglik":
            raise NabenchError(
                f"config {items.config!r}: loglik mode scores option letters; "
                "individual-prior (True/False) configs need --mode generate"
            )
        rows = items.rows
        if self.prompt_format == "lm-eval" and items.kind != "mc":
            raise NabenchError(
                f"config {items.config!r}: --prompt-format lm-eval needs question/choices/answer "
                "rows; artifact configs carry their own prompts"
            )
        if items.kind == "mc":
            return [
                mc_request(
                    str(q),
                    [str(c) for c in cs],
                    self.mode,
                    self.max_tokens,
                    self.logprobs_k,
                    self.prompt_format,
                    self.decoding,
                    self.token_logprobs,
                )
                for q, cs in zip(rows["question"], rows["choices"], strict=True)
            ]
        return [
            artifact_request(
                str(p),
                None if pd.isna(s) else str(s),
                self.mode,
                self.max_tokens,
                self.logprobs_k,
                self.decoding,
                self.token_logprobs,
            )
            for p, s in zip(rows["prompt"], rows["stop"], strict=True)
        ]

    def produce(self, items: EvalItems) -> Produced:
        asked = items.asked_rows
        reqs = [r for r, a in zip(self.requests(items), asked.tolist(), strict=True) if a]
        sent, stats = run_cached(
            self.backend,
            reqs,
            self.cache,
            namespace=self.namespace,
            chunk_size=self.chunk_size,
            progress=self.progress,
        )
        comps = _with_not_asked(sent, asked)
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
            prefix = HARNESS_DELIMITER if self.prompt_format == "lm-eval" else None
            lps = [
                _first_token_options(c, int(k), self.backend.name, prefix)
                for c, k in zip(comps, n_choices, strict=True)
            ]
        tokens = [c.logprobs for c in comps] if self.token_logprobs else None
        return Produced(
            raw,
            lps,
            stats.calls,
            stats.cache_hits,
            stats.elapsed_s,
            stats.retries,
            stats.errors,
            tokens,
        )


_NOT_ASKED = Completion(text="", finish_reason="not_asked")


def _with_not_asked(sent: Sequence[Completion], asked: NDArray[np.bool_]) -> list[Completion]:
    """One completion per prompt row: the sent ones in order, an empty one where the row
    was not asked (scored as invalid by `score_outputs`)."""
    it = iter(sent)
    return [next(it) if a else _NOT_ASKED for a in asked.tolist()]


def _first_token_options(
    comp: Completion, n_choices: int, backend: str, exact_prefix: str | None = None
) -> list[float]:
    if comp is _NOT_ASKED:
        return [-math.inf] * n_choices
    if not comp.logprobs:
        raise NabenchError(
            f"the {backend!r} backend returned no log-probabilities; --mode loglik needs a "
            "backend/server that returns top log-probs of generated tokens (use --mode generate)"
        )
    return option_logprobs(comp.logprobs[0].top, n_choices, exact_prefix)
