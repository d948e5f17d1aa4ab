"""`openai` backend: any OpenAI-compatible server (OpenAI, vLLM, llama-cpp-python, ...).

One long-lived `openai.OpenAI` client per backend; requests of a batch run on a thread pool of
`concurrency` workers. Retries are the client's own (`max_retries`: 408, 409, 429, 5xx,
timeouts and connection errors, exponential backoff with jitter, `Retry-After` honoured); each
retried attempt is counted in `counters.retries` by an httpx request hook reading the retry
number the client sends (`x-stainless-retry-count`). JSON mode adapts to the server:
`json_schema` (OpenAI, vLLM) or `json_object` + `schema` (llama-cpp-python); `auto`
reads `owned_by` of /v1/models and falls back to `json_object` on a 400/422.
The API key is never printed or logged, nor the `user:password@` of the base URL
(`base_url` stays whole for the requests; records and messages show `mask_url`'s form).
Every request is bounded (`_http_limits`): `connect_timeout_s` (30 s) per connect,
`timeout_s` (120 s) per attempt including the whole body, `total_timeout_s` (600 s) for the
request with all its retries, and `max_response_mb` (8 MiB) per response.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from nabench.core.errors import NabenchError
from nabench.core.redact import mask_url, scrub, url_secrets

from . import _http_limits as bounds
from ._registry import register_backend
from ._types import Backend, ChatRequest, Completion, TokenLogprob
from ._weights import declared_revision

JsonMode = Literal["auto", "json_schema", "json_object"]
# `owned_by` values of servers that only understand {"type": "json_object", "schema": ...}
_JSON_OBJECT_OWNERS = {"me", "llamacpp", "llama.cpp", "llama-cpp-python"}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NabenchError("the `openai` backend needs: pip install 'nabench[llm]'") from exc
    return openai


def _error_text(exc: BaseException, secrets: frozenset[str] = frozenset()) -> str:
    status = getattr(exc, "status_code", None)
    msg = str(exc).splitlines()[0][:500] if str(exc) else ""
    cause = exc.__cause__
    if type(cause).__name__ in ("ResponseTooLarge", "ReadTimeout", "ConnectTimeout"):
        msg = f"{msg} ({cause})"  # the client's own text ("Connection error.") hides why
    text = f"{type(exc).__name__}" + (f" ({status})" if status else "") + f": {msg}"
    return scrub(text, secrets)


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


RETRY_HEADER = "x-stainless-retry-count"  # the client numbers its attempts: 0, 1, 2, ...


@register_backend("openai")
class OpenAIBackend(Backend):
    """An OpenAI-compatible HTTP server, called with bounded concurrency and the client's
    retries."""

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        model_id: str | None = None,
        concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 120.0,
        json_mode: JsonMode = "auto",
        connect_timeout_s: float = 30.0,
        total_timeout_s: float = 600.0,
        max_response_mb: float = 8.0,
        revision: str | None = None,
    ) -> None:
        super().__init__()
        # A server's weights cannot be fingerprinted from here: the revision is what the
        # user declares (`--option revision=...`, e.g. the commit of the weights it serves),
        # else None, and then two servers serving one model name are one model.
        self._revision = declared_revision(revision)
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if json_mode not in ("auto", "json_schema", "json_object"):
            raise NabenchError(f"json_mode must be auto, json_schema or json_object: {json_mode}")
        self._openai = _import_openai()
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        self.concurrency = concurrency
        self.limits = bounds.Limits(
            connect_s=float(connect_timeout_s),
            attempt_s=float(timeout_s),
            total_s=float(total_timeout_s),
            max_response_bytes=int(float(max_response_mb) * bounds.MiB),
        )
        self.max_retries = self.limits.retries(max_retries)  # what fits the total deadline
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        # A server may quote the key it rejected in its error body: scrub it like the URL's.
        echoed = {key} if len(key) >= 4 and key != "EMPTY" else set()
        self._secrets = url_secrets(self.base_url) | echoed
        self.json_mode: JsonMode = json_mode
        self._json_mode_resolved = json_mode != "auto"
        self._lock = threading.Lock()
        self._client = self._openai.OpenAI(
            base_url=self.base_url,
            api_key=key,
            max_retries=self.max_retries,
            timeout=self.limits.httpx_timeout(),
            http_client=self._openai.DefaultHttpxClient(
                event_hooks={"request": [self._count_retry]},
                transport=bounds.BoundedTransport(self.limits),
            ),
        )
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="openai")
        self.model = (
            model or os.environ.get("NABENCH_OPENAI_MODEL") or os.environ.get("OPENAI_MODEL")
        )
        if self.model is None:
            self.model = self._first_model()
        self.model_id = model_id or self.model

    @property
    def revision(self) -> str | None:
        """The weights revision the user declared with `--option revision=...` (or None)."""
        return self._revision

    def auth_headers(self) -> dict[str, str]:
        """The `Authorization` header this backend's client sends; the Ray engine sends the
        same, so a keyed endpoint answers both engines alike."""
        return {"Authorization": f"Bearer {self._client.api_key}"}

    def redact(self, text: str) -> str:
        """`text` with this backend's key and URL credentials masked (`core.redact.MASK`)."""
        return scrub(text, self._secrets)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, base_url={mask_url(self.base_url)!r})"

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()

    # -- plumbing -------------------------------------------------------------------
    def _count_retry(self, request: Any) -> None:
        """httpx request hook: an attempt numbered > 0 is a retry of the client."""
        if int(request.headers.get(RETRY_HEADER, "0") or 0) > 0:
            with self._lock:
                self.counters.retries += 1

    def _first_model(self) -> str:
        page = self._client.models.list()
        if not page.data:
            raise NabenchError(f"server at {mask_url(self.base_url)} lists no models")
        return str(page.data[0].id)

    def _resolve_json_mode(self) -> None:
        if self._json_mode_resolved:
            return
        self._json_mode_resolved = True
        try:
            owners = {str(getattr(m, "owned_by", "")).lower() for m in self._client.models.list()}
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

    def _call(self, req: ChatRequest) -> Completion:
        common: dict[str, Any] = {"model": self.model, **req.openai_sampling()}
        if req.min_tokens:  # llama-cpp-python and vLLM servers read it from the body
            common["extra_body"] = {"min_tokens": req.min_tokens}
        if req.messages is not None:
            mode = "json_schema" if self.json_mode == "auto" else self.json_mode
            kwargs = dict(common, messages=req.openai_messages())
            if req.logprobs is not None:
                kwargs.update(logprobs=True, top_logprobs=req.logprobs)
            rf = self._response_format(req, mode)
            if rf is not None:
                kwargs["response_format"] = rf
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except (self._openai.BadRequestError, self._openai.UnprocessableEntityError):
                if rf is None or self.json_mode != "auto":
                    raise
                # server does not know json_schema: switch to json_object for good
                self.json_mode = "json_object"
                kwargs["response_format"] = self._response_format(req, "json_object")
                resp = self._client.chat.completions.create(**kwargs)
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
                **kwargs.get("extra_body", {}),
                "structured_outputs": {"json": req.schema},
                "response_format": {"type": "json_object", "schema": req.schema},
            }
        resp = self._client.completions.create(**kwargs)
        choice = resp.choices[0]
        return Completion(
            text=choice.text, finish_reason=choice.finish_reason, logprobs=_logprobs_text(choice)
        )

    def _one(self, req: ChatRequest) -> Completion:
        try:
            with bounds.total_deadline(self.limits.total_s):
                return self._call(req)
        except Exception as exc:  # after the client's own retries; never raised out of a batch
            return Completion(error=_error_text(exc, self._secrets))
        finally:
            self._request_done()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        self.counters.requests += len(requests)
        if any(r.json_schema is not None for r in requests):
            self._resolve_json_mode()
        return list(self._pool.map(self._one, requests))
