"""Model layer: backends behind one interface, an on-disk response cache, cached runs.

Backends (`get_backend(name, **options)`): `local` (llama-cpp-python in-process),
`openai` (any OpenAI-compatible server), `vllm` (in-process vLLM). Heavy dependencies
are imported only when a backend is created.
"""

from . import _local, _openai, _ray, _vllm  # noqa: F401  (register backends and engines)
from ._cache import ResponseCache, cache_key
from ._convert import convert_gguf_to_hf
from ._engine import ENGINES, Engine, LocalEngine, make_engine, register_engine
from ._json import (
    JsonBatch,
    JsonResult,
    complete_json,
    complete_json_batches,
    count_cached,
    count_cached_batches,
    parse_json,
)
from ._local import LocalBackend
from ._models import SMOLLM2_ID, default_hf_dir, model_id_from_path, smollm2_gguf_path
from ._openai import OpenAIBackend
from ._plan import CONFIRM_ABOVE, ConfirmationNeeded, JobPlan, estimate_hook
from ._ray import RayEngine, RaySettings, chat_payload
from ._registry import BACKENDS, get_backend, register_backend
from ._run import ChunkHook, count_hits, run_cached, write_json_atomic, write_stats
from ._server import free_port, llama_server_command, local_server, vllm_server
from ._types import (
    Backend,
    ChatRequest,
    Completion,
    RunStats,
    TokenLogprob,
    canonical_json,
    schema_json,
)
from ._vllm import VLLMBackend, vllm_cpu_env
from ._weights import weights_fingerprint

__all__ = [
    "BACKENDS",
    "CONFIRM_ABOVE",
    "ENGINES",
    "SMOLLM2_ID",
    "Backend",
    "ChatRequest",
    "ChunkHook",
    "Completion",
    "ConfirmationNeeded",
    "Engine",
    "JobPlan",
    "JsonBatch",
    "JsonResult",
    "LocalBackend",
    "LocalEngine",
    "OpenAIBackend",
    "RayEngine",
    "RaySettings",
    "ResponseCache",
    "RunStats",
    "TokenLogprob",
    "VLLMBackend",
    "cache_key",
    "canonical_json",
    "chat_payload",
    "complete_json",
    "complete_json_batches",
    "convert_gguf_to_hf",
    "count_cached",
    "count_cached_batches",
    "count_hits",
    "default_hf_dir",
    "estimate_hook",
    "free_port",
    "get_backend",
    "llama_server_command",
    "local_server",
    "make_engine",
    "model_id_from_path",
    "parse_json",
    "register_backend",
    "register_engine",
    "run_cached",
    "schema_json",
    "smollm2_gguf_path",
    "vllm_cpu_env",
    "vllm_server",
    "weights_fingerprint",
    "write_json_atomic",
    "write_stats",
]
