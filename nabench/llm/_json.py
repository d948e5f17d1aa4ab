"""Structured (JSON-schema) outputs with deterministic retries of invalid answers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from ._cache import ResponseCache
from ._run import DEFAULT_CHUNK_SIZE, ChunkHook, run_cached
from ._types import Backend, ChatRequest, Completion, RunStats, schema_json

RETRY_TEMPERATURE = 0.7


@dataclass(frozen=True)
class JsonResult:
    """Outcome of one structured request. `value` is None unless `valid`."""

    value: Any
    raw: str
    attempts: int
    valid: bool
    error: str | None = None
    # The request never got an answer (dead endpoint, HTTP 5xx): an outage, not bad output.
    backend_error: bool = False


def parse_json(text: str, validator: jsonschema.protocols.Validator) -> tuple[Any, str | None]:
    """(value, None) if `text` is JSON valid under the schema, else (None, reason)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc}"
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    if errors:
        return None, f"schema: {errors[0].message}"
    return value, None


def attempt_request(request: ChatRequest, schema: str, attempt: int) -> ChatRequest:
    """The request for attempt `attempt` (1-based): attempt 1 as given, then seed=k, T=0.7."""
    req = dataclasses.replace(request, json_schema=schema)
    if attempt > 1:
        req = dataclasses.replace(req, seed=attempt, temperature=RETRY_TEMPERATURE)
    return req


def schema_validator(schema: Mapping[str, Any] | str) -> tuple[str, Any]:
    """(the schema as canonical JSON text, a validator for it); a bad schema raises."""
    schema_str = schema_json(schema)
    schema_obj = json.loads(schema_str)
    validator_cls = jsonschema.validators.validator_for(schema_obj)
    validator_cls.check_schema(schema_obj)
    return schema_str, validator_cls(schema_obj)


def judge(
    comp: Completion,
    attempt: int,
    validator: jsonschema.protocols.Validator,
    check: Callable[[Any], str | None] | None,
) -> JsonResult:
    """One answer as a result: valid JSON under the schema that `check` accepts, or why not."""
    err: str | None
    if comp.error is not None:
        value, err = None, f"backend: {comp.error}"
    else:
        value, err = parse_json(comp.text, validator)
        if err is None and check is not None:
            err = check(value)
            value = None if err else value
    return JsonResult(value=value, raw=comp.text, attempts=attempt, valid=err is None,
                      error=err, backend_error=comp.error is not None)  # fmt: skip


def complete_json(
    backend: Backend,
    cache: ResponseCache,
    requests: Sequence[ChatRequest],
    schema: Mapping[str, Any] | str,
    max_attempts: int = 3,
    namespace: str = "",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = False,
    check: Callable[[Any], str | None] | None = None,
    on_chunk: ChunkHook | None = None,
) -> tuple[list[JsonResult], RunStats]:
    """Ask for JSON valid under `schema`; retry invalid answers up to `max_attempts` times.

    `check(value)` may reject a schema-valid value with a reason (e.g. a label that
    contradicts itself); it is then invalid and retried like malformed JSON. Each
    re-asked request counts once in `RunStats.retries` (beside transport retries).

    Attempt k > 1 uses seed=k and temperature 0.7, and k is part of the cache namespace,
    so a cached re-run replays exactly the same attempts. Invalid output is reported as
    invalid with its raw text; no value is ever guessed from it.
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be >= 1")
    schema_str, validator = schema_validator(schema)
    results: dict[int, JsonResult] = {}  # the valid result, or the last attempt's
    todo = list(range(len(requests)))
    stats = RunStats(total=len(requests))
    for attempt in range(1, max_attempts + 1):
        if not todo:
            break
        reqs = [attempt_request(requests[i], schema_str, attempt) for i in todo]
        comps, st = run_cached(
            backend,
            reqs,
            cache,
            namespace=f"{namespace}|json-attempt={attempt}",
            chunk_size=chunk_size,
            progress=progress,
            on_chunk=on_chunk if attempt == 1 else None,
            label="" if attempt == 1 else f"retry {attempt - 1} of {max_attempts - 1}",
        )
        stats.add(st)  # calls / cache_hits / errors count requests over all attempts
        if attempt > 1:
            stats.retries += len(reqs)
        for i, comp in zip(todo, comps, strict=True):
            results[i] = judge(comp, attempt, validator, check)
        todo = [i for i in todo if not results[i].valid]
    stats.extra["valid"] = sum(1 for r in results.values() if r.valid)
    stats.extra["invalid"] = len(todo)
    return [results[i] for i in range(len(requests))], stats


def count_cached(
    backend: Backend,
    cache: ResponseCache,
    requests: Sequence[ChatRequest],
    schema: Mapping[str, Any] | str,
    namespace: str = "",
) -> int:
    """How many of `requests` `complete_json` would answer from `cache` on its first attempt
    (what a plan reports before a long model job starts)."""
    schema_str = schema_json(schema)
    ns = f"{namespace}|json-attempt=1"
    keys = cache.backend_keys(backend, [attempt_request(r, schema_str, 1) for r in requests], ns)
    return len(cache.get_many(keys))


@dataclass(frozen=True)
class JsonBatch:
    """Requests that share one JSON schema; `members` are their positions in the caller's
    list (e.g. one batch per prompt style, each with its own schema)."""

    members: Sequence[int]
    requests: Sequence[ChatRequest]
    schema: Mapping[str, Any] | str


def count_cached_batches(
    backend: Backend, cache: ResponseCache, batches: Iterable[JsonBatch], namespace: str = ""
) -> int:
    """`count_cached` over batches that each carry their own schema."""
    return sum(count_cached(backend, cache, b.requests, b.schema, namespace) for b in batches)


def complete_json_batches(
    backend: Backend,
    cache: ResponseCache,
    batches: Iterable[JsonBatch],
    *,
    total: int,
    max_attempts: int = 3,
    namespace: str = "",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = False,
) -> tuple[dict[int, JsonResult], RunStats]:
    """`complete_json` for requests under several schemas: {member: result} and one RunStats
    over all batches (`total` requests; `valid` / `invalid` summed)."""
    results: dict[int, JsonResult] = {}
    stats = RunStats(total=total)
    valid = invalid = 0
    for batch in batches:
        out, part = complete_json(
            backend,
            cache,
            batch.requests,
            batch.schema,
            max_attempts=max_attempts,
            namespace=namespace,
            chunk_size=chunk_size,
            progress=progress,
        )
        stats.add(part)
        valid += int(part.extra.get("valid", 0))
        invalid += int(part.extra.get("invalid", 0))
        results.update(zip(batch.members, out, strict=True))
    stats.extra.update({"valid": valid, "invalid": invalid})
    return results, stats
