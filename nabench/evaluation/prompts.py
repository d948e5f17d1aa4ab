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
* Artifact rows (columns ``prompt`` / ``target`` / ``stop``) are raw completion prompts
  written by the artifact builder and used exactly as they are. In loglik mode ``" ("``
  is appended so that the next token is the option letter (the prompts end with
  ``Answer:`` and their few-shot answers read ``Answer: (B)``).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Literal

from nabench.llm import ChatRequest

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
) -> ChatRequest:
    """The request for one multiple-choice row (greedy decoding)."""
    if prompt_format == "lm-eval":
        if mode != "loglik":
            raise ValueError("the lm-eval prompt format is scored by log-probabilities (loglik)")
        return ChatRequest(
            prompt=harness_prompt(question, choices),
            max_tokens=1,
            logprobs=logprobs_k,
            min_tokens=1,  # the letters' log-probs even where end-of-text is likeliest
        )
    if mode == "generate":
        return ChatRequest.chat(cot_prompt(question, choices), max_tokens=max_tokens)
    if mode == "loglik":
        return ChatRequest.chat(letter_prompt(question, choices), max_tokens=1, logprobs=logprobs_k)
    raise ValueError(f"unknown mode {mode!r}")


def artifact_request(
    prompt: str,
    stop: str | Sequence[str] | None,
    mode: Mode,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    logprobs_k: int = DEFAULT_LOGPROBS_K,
) -> ChatRequest:
    """A raw completion request from an artifact row's own ``prompt`` and ``stop``."""
    stops: tuple[str, ...] = () if not stop else (stop,) if isinstance(stop, str) else tuple(stop)
    if mode == "generate":
        return ChatRequest(prompt=prompt, stop=stops, max_tokens=max_tokens)
    if mode == "loglik":
        return ChatRequest(
            prompt=prompt + ARTIFACT_LOGLIK_SUFFIX, max_tokens=1, logprobs=logprobs_k
        )
    raise ValueError(f"unknown mode {mode!r}")
