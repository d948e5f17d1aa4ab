"""`nabench eval`: evaluate a built dataset with a model backend or a reference strategy.

Pipeline per config: load rows (``datasets.load_dataset``) → items
(:mod:`~nabench.evaluation.items`) → answers (:mod:`~nabench.evaluation.producers`) →
parse, score, write (:mod:`~nabench.evaluation.outputs`). The run folder and its
recorded settings come from :mod:`~nabench.evaluation.run_identity`: a folder holding a
run with other settings is never written into.

``eval`` refuses the configs that hold no evaluation items (``excluded``: quarantined
items; ``labels``: NA-applicability labels; ``redux``: MMLU-Redux annotations) and skips
them, ``fewshot`` and ``qi_step1`` when no config is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from nabench.core.errors import NabenchError, first_line
from nabench.core.portable import hub_miss_note, require_location
from nabench.evaluation.items import EvalItems, build_items, sample_rows
from nabench.evaluation.outputs import score_outputs, summarise, write_config_results
from nabench.evaluation.producers import (
    ModelProducer,
    Produced,
    Producer,
    StrategyProducer,
    backend_endpoint,
    option_logprobs,
    renormalise,
)
from nabench.evaluation.prompts import (
    DEFAULT_LOGPROBS_K,
    DEFAULT_MAX_TOKENS,
    PROMPT_VERSION,
    Mode,
    PromptFormat,
)
from nabench.evaluation.results import items_sha256
from nabench.evaluation.run_identity import (
    check_results_out,
    model_slug,
    resolve_run_dir,
    write_settings,
)
from nabench.evaluation.scoring import DEFAULT_INVALID_CREDIT
from nabench.evaluation.strategies import get_strategy
from nabench.llm import Backend, ResponseCache
from nabench.llm.options import default_cache_path, engine_record, open_backend
from nabench.schemas.model import ModelSpec
from nabench.schemas.protocol import Protocol, ScoringPreset, get_protocol

__all__ = [
    "NON_EVAL_CONFIGS",
    "REFUSED_CONFIGS",
    "ConfigResult",
    "EvalItems",
    "EvalOptions",
    "ModelProducer",
    "Produced",
    "StrategyProducer",
    "build_items",
    "evaluate_config",
    "model_slug",
    "option_logprobs",
    "renormalise",
    "run_eval",
    "score_outputs",
    "summarise",
    "write_config_results",
]

# Configs of built datasets that are no evaluation items: refused when named.
REFUSED_CONFIGS = ("excluded", "labels", "redux")
# ...and, with these, skipped when no config is named.
NON_EVAL_CONFIGS = (*REFUSED_CONFIGS, "fewshot", "qi_step1")


@dataclass
class ConfigResult:
    config: str
    summary: dict[str, Any]
    parquet: Path
    summary_path: Path


def evaluate_config(
    items: EvalItems,
    producer: Producer,
    run_dir: Path,
    invalid_credit: float = DEFAULT_INVALID_CREDIT,
    meta: dict[str, Any] | None = None,
    scoring: ScoringPreset | None = None,
) -> ConfigResult:
    """Answers → parse → score → write for one config (the one code path of every run)."""
    produced = producer.produce(items)
    responses = score_outputs(items, produced, producer.model_id, invalid_credit, scoring)
    # what the run answered, so a report notices the build rebuilt in place under it
    dataset = (meta or {}).get("dataset")
    meta = {**(meta or {}), "items_sha256": items_sha256(dataset, items.config, responses["id"])}
    summary = summarise(
        responses,
        config=items.config,
        model_id=producer.model_id,
        run=run_dir.name,
        backend=producer.backend_name,
        mode=producer.mode,
        invalid_credit=invalid_credit,
        produced=produced,
        kind=items.kind,
        meta=meta,
    )
    parquet, summary_path = write_config_results(responses, summary, run_dir)
    return ConfigResult(items.config, summary, parquet, summary_path)


@dataclass
class EvalOptions:
    """Everything `nabench eval` takes."""

    dataset: str
    # The model (`--backend reference`: `model` names a strategy) and its engine.
    spec: ModelSpec
    configs: Sequence[str] = ()
    mode: Mode = "generate"
    split: str | None = None
    revision: str | None = None
    limit: int | None = None
    sample: int | None = None  # stratified items (`sample_rows`); excludes `limit`
    out: Path = Path("results")
    run_name: str | None = None
    invalid_credit: float = DEFAULT_INVALID_CREDIT
    cache: Path | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    logprobs_k: int = DEFAULT_LOGPROBS_K
    chunk_size: int = 32
    progress: bool = True
    prompt_format: PromptFormat = "nabench"
    # A named preset (`--protocol`): its decoding and scoring replace max_tokens and
    # invalid_credit; None keeps nabench's defaults (the `nabench` preset's values).
    protocol: str | None = None


def eval_protocol(options: EvalOptions) -> Protocol | None:
    """The preset `options.protocol` names, checked against the mode it needs."""
    if options.protocol is None:
        return None
    protocol = get_protocol(options.protocol)
    if "eval" not in protocol.applies_to:
        raise NabenchError(
            f"protocol {protocol.name!r} applies to {', '.join(protocol.applies_to)}, not eval"
        )
    if options.mode != "generate" or options.prompt_format != "nabench":
        raise NabenchError(
            f"--protocol {protocol.name}: its decoding is generation with nabench's prompts "
            "(--mode generate, --prompt-format nabench)"
        )
    return protocol


def protocol_options(options: EvalOptions, protocol: Protocol | None) -> EvalOptions:
    """`options` with the preset's token bound and invalid-answer score."""
    if protocol is None:
        return options
    if protocol.decoding is not None:
        options = replace(options, max_tokens=protocol.decoding.max_tokens)
    if protocol.scoring is not None:
        options = replace(options, invalid_credit=protocol.scoring.invalid_score)
    return options


def eval_configs(dataset: str, revision: str | None, requested: Sequence[str]) -> list[str]:
    """The configs to evaluate: ``requested``, or every evaluable config of the dataset."""
    require_location(dataset, folder=True)
    import datasets  # heavy: only when a dataset is read

    refused = [c for c in requested if c in REFUSED_CONFIGS]
    if refused:
        raise NabenchError(
            f"config(s) {refused} hold no evaluation items (excluded: quarantined items; "
            "labels: NA-applicability labels; redux: MMLU-Redux annotations); evaluate the "
            "perturbed configs"
        )
    try:
        names = datasets.get_dataset_config_names(dataset, revision=revision)
    except Exception as exc:
        first = first_line(exc)
        note = hub_miss_note(dataset)
        raise NabenchError(f"cannot read the configs of {dataset!r}: {first}{note}") from exc
    if requested:
        unknown = [c for c in requested if c not in names]
        if unknown:
            raise NabenchError(
                f"unknown config(s) {unknown} in {dataset!r}; available: {', '.join(names)}"
            )
        return list(requested)
    return [c for c in names if c not in NON_EVAL_CONFIGS]


def load_rows(dataset: str, config: str, split: str | None, revision: str | None) -> pd.DataFrame:
    """One config's split as a DataFrame (``test`` by default, or the only split)."""
    import datasets

    dd = datasets.load_dataset(dataset, config, revision=revision)
    splits = list(dd)
    if split is None:
        if "test" in dd:
            split = "test"
        elif len(splits) == 1:
            split = splits[0]
        else:
            raise NabenchError(f"config {config!r} has splits {splits}; choose one with --split")
    if split not in dd:
        raise NabenchError(f"config {config!r} has no split {split!r} (has {splits})")
    return dd[split].to_pandas()


def _producer(
    options: EvalOptions, protocol: Protocol | None = None
) -> tuple[Producer, ResponseCache | None, Backend | None]:
    spec = options.spec
    if spec.backend == "reference":
        if options.mode != "generate":
            raise NabenchError("reference strategies have no log-probabilities: --mode generate")
        if not spec.model:
            raise NabenchError("--backend reference needs --model (a strategy name)")
        if spec.engine != "local":
            raise NabenchError("--backend reference calls no model: --engine local")
        authors = bool(protocol and protocol.scoring and protocol.scoring.answer_rule != "nabench")
        answer_format = "({})" if authors else "Answer: {}"
        return (
            StrategyProducer(get_strategy(spec.model), answer_format=answer_format),
            None,
            None,
        )
    backend = open_backend(spec)
    cache = ResponseCache(options.cache or default_cache_path())
    producer = ModelProducer(
        backend,
        cache,
        options.mode,
        options.max_tokens,
        options.logprobs_k,
        options.chunk_size,
        options.progress,
        options.prompt_format,
        decoding=protocol.decoding if protocol else None,
        token_logprobs=bool(
            protocol
            and protocol.scoring
            and "selected_token_probability" in protocol.scoring.confidence
        ),
    )
    return producer, cache, backend


def run_settings(
    options: EvalOptions, producer: Producer, endpoint: str, protocol: Protocol | None = None
) -> dict[str, Any]:
    """What makes this run's outputs differ from another's (``run.json``; see run_identity).
    A protocol's preset is recorded whole; without one the key is absent (runs written
    before presets existed keep their identity)."""
    local = Path(options.dataset)
    extra = {} if protocol is None else {"protocol": protocol.record()}
    # Which weights answered (a content fingerprint for local/vllm); absent where none is
    # known, so a run of a server's model keeps the identity it had before revisions.
    revision = producer.model_revision
    if revision is not None:
        extra["model_revision"] = revision
    return {
        **extra,
        "model": producer.model_id,
        "backend": producer.backend_name,
        "endpoint": endpoint,
        "mode": options.mode,
        "prompt_format": options.prompt_format,
        "dataset": str(local.resolve()) if local.exists() else options.dataset,
        "revision": options.revision,
        "split": options.split,
        "limit": options.limit,
        **({"sample": options.sample} if options.sample is not None else {}),
        "max_tokens": options.max_tokens if options.mode == "generate" else 1,
        "logprobs_k": options.logprobs_k if options.mode == "loglik" else None,
        "invalid_credit": float(options.invalid_credit),
        "prompt_version": PROMPT_VERSION,
    }


def run_eval(options: EvalOptions) -> list[ConfigResult]:
    """Evaluate every selected config; returns one result per config."""
    if not 0.0 <= options.invalid_credit <= 1.0:
        raise NabenchError("--invalid-credit must be in [0, 1]")
    if options.limit is not None and options.sample is not None:
        raise NabenchError("--limit and --sample exclude each other: use one of them")
    if options.prompt_format == "lm-eval" and options.mode != "loglik":
        raise NabenchError("--prompt-format lm-eval is scored by log-probabilities: --mode loglik")
    check_results_out(Path(options.out), options.dataset)
    protocol = eval_protocol(options)
    options = protocol_options(options, protocol)
    configs = eval_configs(options.dataset, options.revision, options.configs)
    producer, cache, backend = _producer(options, protocol)
    try:
        endpoint = backend_endpoint(backend) if backend is not None else "in-process"
        settings = run_settings(options, producer, endpoint, protocol)
        default = model_slug(producer.model_id, options.mode, options.prompt_format)
        run_dir = resolve_run_dir(Path(options.out), options.run_name, default, settings)
        engine = engine_record(backend) if backend is not None else {"engine": "local"}
        write_settings(run_dir, settings, engine)
        keys = ("dataset", "revision", "split", "limit", "endpoint", "prompt_format")
        meta = {k: settings[k] for k in keys}
        if options.sample is not None:
            meta["sample"] = options.sample
        meta.update(max_tokens=settings["max_tokens"], logprobs_k=settings["logprobs_k"])
        meta["model_revision"] = settings.get("model_revision")
        if protocol is not None:
            meta["protocol"] = protocol.name
        scoring = protocol.scoring if protocol else None
        results = []
        for config in configs:
            df = load_rows(options.dataset, config, options.split, options.revision)
            if options.sample is not None:
                df = sample_rows(df, options.sample, config)
            items = build_items(config, df, options.limit)
            results.append(
                evaluate_config(items, producer, run_dir, options.invalid_credit, meta, scoring)
            )
    finally:
        if cache is not None:
            cache.close()
        if backend is not None:
            backend.close()
    return results
