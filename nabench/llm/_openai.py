"""`openai` backend: any OpenAI-compatible server (OpenAI, vLLM, llama-cpp-python, ...).

Requests of a batch run concurrently (bounded by an asyncio semaphore). 429, 408, 409,
5xx, timeouts and connection errors are retried with exponential backoff and full
jitter; every retry is counted in `counters.retries`. JSON mode adapts to the server:
`json_schema` (OpenAI, vLLM) or `json_object` + `schema` (llama-cpp-python); `auto`
reads `owned_by` of /v1/models and falls back to `json_object` on a 400/422.
The API key is never printed or logged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
from collections.abc import Sequence
from typing import Any, Literal

from nabench.core.errors import NabenchError

from ._registry import register_backend
from ._types import Backend, ChatRequest, Completion, TokenLogprob

JsonMode = Literal["auto", "json_schema", "json_object"]
_RETRY_STATUS = {408, 409, 429}
# `owned_by` values of servers that only understand {"type": "json_object", "schema": ...}
_JSON_OBJECT_OWNERS = {"me", "llamacpp", "llama.cpp", "llama-cpp-python"}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NabenchError("the `openai` backend needs: pip install 'nabench[llm]'") from exc
    return openai


def _is_retryable(openai: Any, exc: BaseException) -> bool:
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUS or exc.status_code >= 500
    return False


def _error_text(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    msg = str(exc).splitlines()[0][:500] if str(exc) else ""
    return f"{type(exc).__name__}" + (f" ({status})" if status else "") + f": {msg}"


def _logprobs_chat(choice: Any) -> tuple[TokenLogprob, ...] | None:
    lp = getattr(choice, "logprobs", None)
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return None
    return tuple(
        TokenLogprob(
            token=t.token,
            logprob=float(t.logprob),
            top=tuple((a.token, float(a.logprob)) for a in (t.top_logprobs or [])),
        )
        for t in content
    )


def _logprobs_text(choice: Any) -> tuple[TokenLogprob, ...] | None:
    lp = getattr(choice, "logprobs", None)
    if lp is None or not lp.tokens:
        return None
    tops = lp.top_logprobs or [None] * len(lp.tokens)
    return tuple(
        TokenLogprob(
            token=tok,
            logprob=float(tlp) if tlp is not None else float("nan"),
            top=tuple((k, float(v)) for k, v in (top or {}).items()),
        )
        for tok, tlp, top in zip(lp.tokens, lp.token_logprobs, tops, strict=True)
    )


@register_backend("openai")
class OpenAIBackend(Backend):
    """An OpenAI-compatible HTTP server, called with bounded concurrency and retries."""

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        model_id: str | None = None,
        concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 120.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        json_mode: JsonMode = "auto",
    ) -> None:
        super().__init__()
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if json_mode not in ("auto", "json_schema", "json_object"):
            raise NabenchError(f"json_mode must be auto, json_schema or json_object: {json_mode}")
        self._openai = _import_openai()
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.json_mode: JsonMode = json_mode
        self.model = (
            model or os.environ.get("NABENCH_OPENAI_MODEL") or os.environ.get("OPENAI_MODEL")
        )
        if self.model is None:
            self.model = self._run(self._first_model())
        self.model_id = model_id or self.model

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r})"

    # -- plumbing -------------------------------------------------------------------
    def _client(self) -> Any:
        return self._openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout_s
        )

    @staticmethod
    def _run(coro: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        # called from inside an event loop (e.g. a notebook): use a private loop
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()

    async def _first_model(self) -> str:
        async with self._client() as client:
            page = await client.models.list()
        if not page.data:
            raise NabenchError(f"server at {self.base_url} lists no models")
        return str(page.data[0].id)

    async def _resolve_json_mode(self, client: Any) -> None:
        if self.json_mode != "auto":
            return
        try:
            page = await client.models.list()
            owners = {str(getattr(m, "owned_by", "")).lower() for m in page.data}
        except Exception:
            owners = set()
        if owners & _JSON_OBJECT_OWNERS:
            self.json_mode = "json_object"
        # otherwise stay "auto": try json_schema, fall back on 400/422

    def _response_format(self, req: ChatRequest, mode: str) -> dict[str, Any] | None:
        if req.json_schema is None:
            return None
        if mode == "json_object":
            return {"type": "json_object", "schema": req.schema}
        return {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": req.schema, "strict": True},
        }

    async def _call(self, client: Any, req: ChatRequest) -> Completion:
        common: dict[str, Any] = {
            "model": self.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
        }
        if req.stop:
            common["stop"] = list(req.stop)
        if req.seed is not None:
            common["seed"] = req.seed
        if req.messages is not None:
            mode = "json_schema" if self.json_mode == "auto" else self.json_mode
            kwargs = dict(common, messages=req.openai_messages())
            if req.logprobs is not None:
                kwargs.update(logprobs=True, top_logprobs=req.logprobs)
            rf = self._response_format(req, mode)
            if rf is not None:
                kwargs["response_format"] = rf
            try:
                resp = await client.chat.completions.create(**kwargs)
            except (self._openai.BadRequestError, self._openai.UnprocessableEntityError):
                if rf is None or self.json_mode != "auto":
                    raise
                # server does not know json_schema: switch to json_object for good
                self.json_mode = "json_object"
                kwargs["response_format"] = self._response_format(req, "json_object")
                resp = await client.chat.completions.create(**kwargs)
            choice = resp.choices[0]
            return Completion(
                text=choice.message.content or "",
                finish_reason=choice.finish_reason,
                logprobs=_logprobs_chat(choice),
            )
        kwargs = dict(common, prompt=req.prompt)
        if req.logprobs is not None:
            kwargs["logprobs"] = req.logprobs
        if req.json_schema is not None:  # vLLM and llama-cpp-python both read these
            kwargs["extra_body"] = {
                "structured_outputs": {"json": req.schema},
                "response_format": {"type": "json_object", "schema": req.schema},
            }
        resp = await client.completions.create(**kwargs)
        choice = resp.choices[0]
        return Completion(
            text=choice.text, finish_reason=choice.finish_reason, logprobs=_logprobs_text(choice)
        )

    async def _with_retries(
        self, client: Any, sem: asyncio.Semaphore, req: ChatRequest
    ) -> Completion:
        attempt = 0
        while True:
            async with sem:
                try:
                    return await self._call(client, req)
                except Exception as exc:
                    if attempt >= self.max_retries or not _is_retryable(self._openai, exc):
                        return Completion(error=_error_text(exc))
            attempt += 1
            self.counters.retries += 1
            cap = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(cap / 2, cap))  # exponential backoff + jitter

    async def _complete_all(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        sem = asyncio.Semaphore(self.concurrency)
        async with self._client() as client:
            if any(r.json_schema is not None for r in requests):
                await self._resolve_json_mode(client)
            return list(
                await asyncio.gather(*(self._with_retries(client, sem, r) for r in requests))
            )

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        self.counters.requests += len(requests)
        return list(self._run(self._complete_all(requests)))
