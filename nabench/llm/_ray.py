"""`--engine ray`: a run's cache misses as a Ray Dataset, through Ray Data LLM processors.

The driver builds the request table, drops what the response cache already holds, and hands
the rest to `ray.data.llm.build_processor`: an `HttpRequestProcessorConfig` per endpoint for
OpenAI-compatible servers (Ray's own qps limit and retries). vLLM engine replicas on GPUs
(`vLLMEngineProcessorConfig`) are not offered: no GPU with vLLM was there to run them, so
their settings would be accepted and never used. Finished blocks land as parquet shards
beside the response cache (`<cache>.ray-shards/`); the driver alone merges them into
SQLite. A killed driver loses only the blocks in flight: the next run merges the shards it
finds before it looks for misses.

A block whose requests still fail after Ray's retries is dropped by Ray Data
(`max_errored_blocks`), and its requests go to the next endpoint in a further pass; what no
endpoint answers becomes a `Completion(error=...)` (an invalid row), never a crashed job.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.core.errors import NabenchError

from ._cache import ResponseCache
from ._engine import Engine, Finished, Work, register_engine
from ._http_limits import Limits
from ._openai import OpenAIBackend
from ._ray_limits import BoundedSessionFactory
from ._types import Backend, ChatRequest, Completion, TokenLogprob, canonical_json

# Columns of a result shard: enough to write the cache row without the request object.
SHARD_COLUMNS = (
    "key",
    "model_id",
    "request_json",
    "text",
    "finish_reason",
    "logprobs_json",
    "error",
)
# Owners (`/v1/models` `owned_by`) of servers that take {"type": "json_object", "schema": ...}.
_JSON_OBJECT_OWNERS = {"me", "llamacpp", "llama.cpp", "llama-cpp-python"}


@dataclass(frozen=True)
class RaySettings:
    """`--engine ray` settings (`--option ray.KEY=VALUE`, or `ray:` in a recipe's model)."""

    address: str | None = None  # None: start a local cluster; "auto" or ray://host:port
    num_cpus: int | None = None  # local cluster only
    endpoints: tuple[str, ...] = ()  # OpenAI-compatible base URLs; default the backend's
    batch_size: int = 8  # requests per block (a block is the unit of loss and retry)
    concurrency: int = 1  # HTTP workers per endpoint
    qps: int | None = None  # per worker; None sends a block's requests at once
    max_retries: int = 2  # Ray's retries per request (429/5xx-gateway/timeouts/refused)
    retry_wait_s: float = 0.2  # base of Ray's exponential backoff
    passes: int = 3  # dispatch rounds; failed blocks move to the next endpoint

    @classmethod
    def from_options(cls, **options: Any) -> RaySettings:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise NabenchError(f"unknown ray option(s) {unknown} (known: {sorted(known)})")
        if "endpoints" in options:
            eps = options["endpoints"]
            options["endpoints"] = tuple([eps] if isinstance(eps, str) else eps)
        settings = cls(**options)
        if settings.batch_size < 1 or settings.passes < 1 or settings.concurrency < 1:
            raise NabenchError("ray options batch_size, passes and concurrency must be >= 1")
        return settings


def chat_payload(req: ChatRequest, model: str, json_mode: str) -> dict[str, Any]:
    """The /v1/chat/completions body the `openai` backend sends for `req`."""
    body: dict[str, Any] = {"model": model, **req.openai_sampling()}
    if req.min_tokens:  # llama-cpp-python and vLLM servers read it from the body
        body["min_tokens"] = req.min_tokens
    if req.prompt is not None:
        body["prompt"] = req.prompt
        if req.logprobs is not None:
            body["logprobs"] = req.logprobs
        if req.json_schema is not None:
            body["response_format"] = {"type": "json_object", "schema": req.schema}
        return body
    body["messages"] = req.openai_messages()
    if req.logprobs is not None:
        body.update(logprobs=True, top_logprobs=req.logprobs)
    if req.json_schema is not None:
        body["response_format"] = (
            {"type": "json_object", "schema": req.schema}
            if json_mode == "json_object"
            else {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": req.schema, "strict": True},
            }
        )
    return body


def _logprobs(choice: dict[str, Any]) -> str | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    tokens = [
        TokenLogprob(
            t["token"],
            float(t["logprob"]),
            tuple((a["token"], float(a["logprob"])) for a in t.get("top_logprobs") or []),
        ).to_json()
        for t in content
    ]
    return json.dumps(tokens, ensure_ascii=False)


def completion_row(row: dict[str, Any]) -> dict[str, Any]:
    """Ray postprocess: one HTTP response -> one shard row (an error row if no choice)."""
    resp = row.get("http_response") or {}
    out = {k: row[k] for k in ("key", "model_id", "request_json")}
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not choices:
        error = resp.get("error", resp) if isinstance(resp, dict) else resp
        why = f"server answered without a choice: {canonical_json(error)[:500]}"
        return {**out, "text": "", "finish_reason": None, "logprobs_json": None, "error": why}
    choice = choices[0]
    text = (
        (choice.get("message") or {}).get("content") if "message" in choice else choice.get("text")
    )
    return {**out, "text": text or "", "finish_reason": choice.get("finish_reason"),
            "logprobs_json": _logprobs(choice), "error": ""}  # fmt: skip


def _http_request_row(row: dict[str, Any]) -> dict[str, Any]:
    """Ray preprocess: the carried columns plus the decoded request body."""
    return {**row, "payload": json.loads(row["payload_json"])}


def _get_json(url: str, timeout_s: float = 5.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            data = json.loads(resp.read().decode("utf-8"))
            return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _completion(row: dict[str, Any], redact: Callable[[str], str] = str) -> Completion:
    if row["error"]:  # a server's error body may quote the key it was sent
        return Completion(error=redact(row["error"]))
    logprobs = row["logprobs_json"]
    return Completion(
        text=row["text"],
        finish_reason=row["finish_reason"],
        logprobs=None
        if logprobs is None
        else tuple(TokenLogprob.from_json(t) for t in json.loads(logprobs)),
    )


class RayEngine(Engine):
    """Ray Data LLM dispatch with the response cache and resume kept on the driver."""

    name = "ray"

    def __init__(self, **options: Any) -> None:
        self.settings = RaySettings.from_options(**options)
        self.stats: dict[str, Any] = {"recovered": 0, "passes": 0, "failed_requests": 0}

    def describe(self) -> dict[str, Any]:
        settings = asdict(self.settings)
        settings["endpoints"] = len(self.settings.endpoints) or 1  # counts, never URLs
        return {"engine": self.name, "ray": settings, **self.stats}

    # -- resume ----------------------------------------------------------------------
    @staticmethod
    def shard_root(cache: ResponseCache) -> Path:
        return cache.path.with_name(cache.path.name + ".ray-shards")

    def recover(self, cache: ResponseCache) -> int:
        root = self.shard_root(cache)
        self._root = root
        if not root.is_dir():
            return 0
        merged = 0
        for run_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            rows = [r for f in sorted(run_dir.glob("*.parquet")) for r in _read_shard(f)]
            merged += cache.put_records(
                [tuple(r[c] for c in SHARD_COLUMNS[:6]) for r in rows if not r["error"]]
            )
            shutil.rmtree(run_dir, ignore_errors=True)
        self.stats["recovered"] += merged
        return merged

    # -- dispatch --------------------------------------------------------------------
    def dispatch(self, backend: Backend, work: Work, chunk_size: int) -> Iterator[Finished]:
        if not work:
            return
        ray = _import_ray()
        if not ray.is_initialized():
            ray.init(
                address=self.settings.address,
                num_cpus=self.settings.num_cpus if self.settings.address is None else None,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        context = ray.data.DataContext.get_current()
        context.max_errored_blocks = -1  # a failed block is retried by the next pass
        context.enable_progress_bars = False
        rows = self._rows(backend, work)
        remaining = dict(rows)
        for attempt in range(self.settings.passes):
            if not remaining:
                break
            self.stats["passes"] = attempt + 1
            out = self._root / uuid.uuid4().hex
            done = self._one_pass(ray, backend, list(remaining.values()), attempt, out)
            yield [(k, c) for k, c in done.items() if k in remaining]
            # the driver has committed this pass to the cache: its shards are no longer needed
            shutil.rmtree(out, ignore_errors=True)
            for k in done:
                remaining.pop(k, None)
        self.stats["failed_requests"] += len(remaining)
        if remaining:
            why = (
                f"no endpoint answered after {self.settings.passes} pass(es) of "
                f"{self.settings.max_retries + 1} attempt(s) each"
            )
            yield [(k, Completion(error=why)) for k in remaining]

    def _rows(self, backend: Backend, work: Work) -> dict[str, dict[str, Any]]:
        if backend.name != "openai":
            raise NabenchError(
                f"--engine ray sends requests to OpenAI-compatible endpoints: use "
                f"--backend openai (got {backend.name!r}); serve a vLLM or llama.cpp model "
                "behind one (see README, 'Ray')"
            )
        model = str(getattr(backend, "model", backend.model_id))
        mode = self._json_mode(backend)
        return {
            key: {
                "key": key,
                "model_id": backend.model_id,
                "request_json": req.canonical_json(),
                "payload_json": json.dumps(chat_payload(req, model, mode), ensure_ascii=False),
            }
            for key, req in work
        }

    def endpoints(self, backend: Backend) -> tuple[str, ...]:
        base = str(getattr(backend, "base_url", ""))
        return tuple(e.rstrip("/") for e in (self.settings.endpoints or (base,)))

    def _json_mode(self, backend: Backend) -> str:
        for url in self.endpoints(backend):
            page = _get_json(f"{url}/models")
            if page is not None:
                owners = {str(m.get("owned_by", "")).lower() for m in page.get("data") or []}
                return "json_object" if owners & _JSON_OBJECT_OWNERS else "json_schema"
        return "json_schema"

    def _one_pass(
        self,
        ray: Any,
        backend: Backend,
        rows: Sequence[dict[str, Any]],
        attempt: int,
        out: Path,
    ) -> dict[str, Completion]:
        """One Ray job: rows round-robin over the live endpoints, shards written per block."""
        from ray.data.llm import HttpRequestProcessorConfig, build_processor

        live = [u for u in self.endpoints(backend) if _get_json(f"{u}/models") is not None]
        if not live:
            return {}
        headers = backend.auth_headers() if isinstance(backend, OpenAIBackend) else None
        route = "completions" if '"prompt"' in rows[0]["payload_json"] else "chat/completions"
        parts = []
        for i, url in enumerate(live):
            share = [r for j, r in enumerate(rows) if (j + attempt) % len(live) == i]
            if not share:
                continue
            config = HttpRequestProcessorConfig(
                url=f"{url}/{route}",
                headers=headers,
                batch_size=self.settings.batch_size,
                concurrency=self.settings.concurrency,
                qps=self.settings.qps,
                max_retries=self.settings.max_retries,
                base_retry_wait_time_in_s=self.settings.retry_wait_s,
                session_factory=_session_factory(backend),
            )
            processor = build_processor(
                config, preprocess=_http_request_row, postprocess=completion_row
            )
            block_count = max(1, -(-len(share) // self.settings.batch_size))
            parts.append(processor(ray.data.from_items(share, override_num_blocks=block_count)))
        dataset = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
        dataset.write_parquet(str(out))
        finished = [r for f in sorted(out.glob("*.parquet")) for r in _read_shard(f)]
        redact = backend.redact if isinstance(backend, OpenAIBackend) else str
        return {r["key"]: _completion(r, redact) for r in finished}


def _session_factory(backend: Backend) -> BoundedSessionFactory:
    """The backend's own request bounds (connect, per attempt, response size) for Ray."""
    limits = getattr(backend, "limits", None) or Limits()
    return BoundedSessionFactory(limits.connect_s, limits.attempt_s, limits.max_response_bytes)


def _read_shard(path: Path) -> list[dict[str, Any]]:
    try:
        table = pq.read_table(path, columns=list(SHARD_COLUMNS))
    except (OSError, pa.ArrowInvalid):  # a shard torn by a kill: its rows are recomputed
        return []
    return table.to_pylist()


def _import_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise NabenchError("--engine ray needs Ray Data: pip install 'nabench[ray]'") from exc
    return ray


register_engine("ray", RayEngine)
