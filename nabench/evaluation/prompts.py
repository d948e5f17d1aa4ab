"""Evaluation prompts: zero-shot chain-of-thought (generate) and letter-only (loglik).

Prompts are data of the evaluation protocol: :data:`PROMPT_VERSION` goes into the
response-cache namespace, so editing a template invalidates cached outputs instead of
silently mixing protocols.

* ``generate`` on a multiple-choice row: one user message (:func:`cot_prompt`) asking
  the model to reason step by step and end with ``Answer: X``; parsed by
  :func:`nabench.evaluation.parse_answer`.
* ``loglik`` on a multiple-choice row: one user message (:func:`letter_prompt`) asking
  for the letter only; one token is generated with its top-k log-probabilities and the
  option letters are read from that first position.
* ``--prompt-format lm-eval`` on a multiple-choice row: lm-evaluation-harness's MMLU
  layout as a raw completion prompt (:func:`harness_prompt`, ``question\nA. …\nAnswer:``),
  scored like loglik: one token with its top-k log-probabilities, the option read from the
  tokens that are exactly ``" A"``, ``" B"``, … (the harness's continuations, its target
  delimiter ``" "`` + letter). One forward pass per item where the harness makes one
  log-likelihood request per option.
* ``--protocol NAME`` (generate mode): the preset's decoding replaces the defaults: its
  prompt (``zero_shot_cot``: :func:`cot_prompt`; ``answer_only``: :func:`letter_prompt`),
  temperature, top-p and token bounds; with ``logprobs`` each generated token's top-k
  log-probabilities come back, for the confidence of the selected option.
* Artifact rows (columns ``prompt`` / ``target`` / ``stop``) are raw completion prompts
  written by the artifact builder and used exactly as they are. In loglik mode ``" ("``
  is appended so that the next token is the option letter (the prompts end with
  ``Answer:`` and their few-shot answers read ``Answer: (B)``).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, Literal

from nabench.llm import ChatRequest
from nabench.schemas.protocol import DecodingPreset

__all__ = [
    "DEFAULT_LOGPROBS_K",
    "DEFAULT_MAX_TOKENS",
    "HARNESS_DELIMITER",
    "LETTERS",
    "PROMPT_FORMATS",
    "PROMPT_VERSION",
    "Mode",
    "PromptFormat",
    "artifact_request",
    "cot_prompt",
    "format_choices",
    "harness_prompt",
    "letter_prompt",
    "mc_request",
]

Mode = Literal["generate", "loglik"]
PromptFormat = Literal["nabench", "lm-eval"]
PROMPT_FORMATS: tuple[PromptFormat, ...] = ("nabench", "lm-eval")
# lm-eval's default target delimiter: the continuation scored after "Answer:" is " A".
HARNESS_DELIMITER = " "

PROMPT_VERSION = "eval-v1"
LETTERS = string.ascii_uppercase
DEFAULT_MAX_TOKENS = 512
DEFAULT_LOGPROBS_K = 20
ARTIFACT_LOGLIK_SUFFIX = " ("


def format_choices(choices: Sequence[str]) -> str:
    """``A. first\\nB. second ...`` (one option per line)."""
    if not 1 <= len(choices) <= len(LETTERS):
        raise ValueError(f"need 1..{len(LETTERS)} choices, got {len(choices)}")
    return "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))


def _letter_list(n: int) -> str:
    letters = list(LETTERS[:n])
    return letters[0] if n == 1 else ", ".join(letters[:-1]) + f" or {letters[-1]}"


def cot_prompt(question: str, choices: Sequence[str]) -> str:
    """Zero-shot chain-of-thought question ending in an ``Answer: X`` instruction."""
    return (
        "Answer the following multiple-choice question. Think step by step, then give "
        f"your final answer on the last line in the form 'Answer: X', where X is one of "
        f"{_letter_list(len(choices))}.\n\n"
        f"Question: {question}\n\n{format_choices(choices)}"
    )


def letter_prompt(question: str, choices: Sequence[str]) -> str:
    """The same question asking for the option letter only (for log-prob scoring)."""
    return (
        "Answer the following multiple-choice question. Respond with only the letter "
        f"({_letter_list(len(choices))}) of the correct answer.\n\n"
        f"Question: {question}\n\n{format_choices(choices)}"
    )


def harness_prompt(question: str, choices: Sequence[str]) -> str:
    """lm-eval's MMLU layout (as nabench's exported tasks render it, for any option count)."""
    return f"{question.strip()}\n{format_choices(choices)}\nAnswer:"


def mc_request(
    question: str,
    choices: Sequence[str],
    mode: Mode,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    logprobs_k: int = DEFAULT_LOGPROBS_K,
    prompt_format: PromptFormat = "nabench",
    decoding: DecodingPreset | None = None,
    logprobs: bool = False,
) -> ChatRequest:
    """The request for one multiple-choice row (greedy decoding unless a protocol's
    ``decoding`` says otherwise; ``logprobs``: per-token top-k log-probs of the generation)."""
    if prompt_format == "lm-eval":
        if mode != "loglik":
            raise ValueError("the lm-eval prompt format is scored by log-probabilities (loglik)")
        return ChatRequest(
            prompt=harness_prompt(question, choices),
            max_tokens=1,
            logprobs=logprobs_k,
            min_tokens=1,  # the letters' log-probs even where end-of-text is likeliest
        )
    if decoding is not None:
        if mode != "generate":
            raise ValueError("a protocol's decoding is for generate mode")
        prompt = cot_prompt if decoding.prompt == "zero_shot_cot" else letter_prompt
        return ChatRequest.chat(
            prompt(question, choices), **_sampling(decoding, logprobs_k if logprobs else None)
        )
    if mode == "generate":
        return ChatRequest.chat(cot_prompt(question, choices), max_tokens=max_tokens)
    if mode == "loglik":
        return ChatRequest.chat(letter_prompt(question, choices), max_tokens=1, logprobs=logprobs_k)
    raise ValueError(f"unknown mode {mode!r}")


def _sampling(decoding: DecodingPreset, logprobs: int | None) -> dict[str, Any]:
    return {
        "temperature": decoding.temperature,
        "top_p": decoding.top_p,
        "min_tokens": decoding.min_tokens,
        "max_tokens": decoding.max_tokens,
        "logprobs": logprobs,
    }


def artifact_request(
    prompt: str,
    stop: str | Sequence[str] | None,
    mode: Mode,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    logprobs_k: int = DEFAULT_LOGPROBS_K,
    decoding: DecodingPreset | None = None,
    logprobs: bool = False,
) -> ChatRequest:
    """A raw completion request from an artifact row's own ``prompt`` and ``stop`` (a
    protocol's ``decoding`` sets sampling and token bounds; its prompt style does not apply)."""
    stops: tuple[str, ...] = () if not stop else (stop,) if isinstance(stop, str) else tuple(stop)
    if decoding is not None:
        if mode != "generate":
            raise ValueError("a protocol's decoding is for generate mode")
        return ChatRequest(
            prompt=prompt, stop=stops, **_sampling(decoding, logprobs_k if logprobs else None)
        )
    if mode == "generate":
        return ChatRequest(prompt=prompt, stop=stops, max_tokens=max_tokens)
    if mode == "loglik":
        return ChatRequest(
            prompt=prompt + ARTIFACT_LOGLIK_SUFFIX, max_tokens=1, logprobs=logprobs_k
        )
    raise ValueError(f"unknown mode {mode!r}")
