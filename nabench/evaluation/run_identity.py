"""Run identity: which folder a `nabench eval` run writes to, and what it was run with.

A run folder ``<out>/<run>/`` holds ``run.json``: the settings that make outputs differ
(model, backend and endpoint, mode, prompt format, dataset, revision, split, limit,
decoding, invalid credit, prompt version), and beside them the engine that dispatched it
(not a setting: both engines give the same outputs). A results folder is never silently
overwritten:

* ``--run-name NAME``: the folder ``NAME``; if it holds a run with other settings the
  command is refused, naming the settings that differ.
* no name: the model slug (``__loglik`` for loglik runs, ``__lm-eval`` for runs in
  lm-eval's prompt format); if that folder holds a run with
  other settings, the first free one of ``<slug>__<backend>``, ``<slug>__<backend>-2``, …
  (the command prints where it wrote).

Adding configs to a run with the same settings, and rerunning it, reuse the folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.core.out_guard import OutKind, check_folder
from nabench.core.safe_load import load_json_file
from nabench.llm import write_json_atomic

__all__ = [
    "RUN_FILE",
    "check_results_out",
    "model_slug",
    "read_settings",
    "resolve_run_dir",
    "write_settings",
]

RUN_FILE = "run.json"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Settings a run folder written before run.json existed still records in its summaries.
_SUMMARY_KEYS = (
    "model",
    "backend",
    "mode",
    "dataset",
    "revision",
    "split",
    "limit",
    "max_tokens",
    "logprobs_k",
    "invalid_credit",
    "prompt_version",
)
# Runs recorded before --prompt-format existed all used nabench's prompts.
_DEFAULTS = {"prompt_format": "nabench"}


def model_slug(model_id: str, mode: str = "generate", prompt_format: str = "nabench") -> str:
    """Default folder name of a run: the model id made path-safe, ``__loglik`` for loglik,
    ``__lm-eval`` for lm-eval's prompt format (always loglik)."""
    slug = _SLUG.sub("_", model_id).strip("_.") or "model"
    if prompt_format == "lm-eval":
        return f"{slug}__lm-eval"
    return f"{slug}__loglik" if mode == "loglik" else slug


def read_settings(run_dir: Path) -> dict[str, Any] | None:
    """The settings of the run in ``run_dir`` (None if it holds no run)."""
    path = run_dir / RUN_FILE
    if path.is_file():  # the bounded loader: a damaged file is one line naming it
        record = load_json_file(path)
        if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
            raise NabenchError(f'{path}: not a run record (no "settings" object)')
        return {**_DEFAULTS, **record["settings"]}
    summaries = sorted(run_dir.glob("*.summary.json"))
    if not summaries:
        return None
    s = load_json_file(summaries[0])
    if not isinstance(s, dict):
        raise NabenchError(f"{summaries[0]}: not an eval summary")
    return {**_DEFAULTS, **{k: s.get(k) for k in _SUMMARY_KEYS}}


# Compared even where an older folder does not record it: a folder written before weights
# revisions existed may hold answers of other weights, so a fingerprinted run never joins it.
_ALWAYS_COMPARED = ("model_revision",)


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    # a legacy folder records fewer settings
    keys = [k for k in new if k in old]
    keys += [k for k in _ALWAYS_COMPARED if k not in keys and (k in old or k in new)]
    return [f"{k}: {old.get(k)!r} → {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


def _candidates(default: str, backend: str) -> Iterator[str]:
    yield default
    yield f"{default}__{backend}"
    k = 2
    while True:
        yield f"{default}__{backend}-{k}"
        k += 1


def resolve_run_dir(out: Path, name: str | None, default: str, settings: Mapping[str, Any]) -> Path:
    """The folder this run writes to (see module docstring)."""
    if name is not None:
        if not _NAME.fullmatch(name):
            raise NabenchError(f"--run-name {name!r}: use letters, digits, '.', '_' and '-' only")
        run_dir = out / name
        old = read_settings(run_dir)
        diff = _differences(old, settings) if old is not None else []
        if diff:
            raise NabenchError(
                f"results folder {run_dir} holds a run with other settings ({'; '.join(diff)}); "
                "choose another --run-name"
            )
        check_folder(run_dir, RUN_OUT)
        return run_dir
    for candidate in _candidates(default, str(settings.get("backend"))):
        old = read_settings(out / candidate)
        if old is None or not _differences(old, settings):
            check_folder(out / candidate, RUN_OUT)
            return out / candidate
    raise AssertionError("unreachable")  # _candidates is infinite


# `--out` is a results root: run folders only (lm-eval/inspect logs kept beside them are
# folders too); a run folder holds what `nabench eval` writes and nothing else.
RESULTS_ROOT = OutKind("a results folder (one folder per run)", lambda _rel, _path: True, True)
RUN_OUT = OutKind(
    "an eval run folder (run.json, <config>.parquet, <config>.summary.json)",
    lambda rel, _path: "/" not in rel and (rel == RUN_FILE or rel.endswith((".parquet", ".json"))),
)


def check_results_out(out: Path, dataset: str) -> None:
    """Refuse an `--out` that is a file, a link, home, a folder with files of its own at the
    top (a project, a build) or the dataset being evaluated, before the backend starts."""
    local = Path(dataset)
    check_folder(out, RESULTS_ROOT, [("the dataset", local)] if local.exists() else [])


def write_settings(
    run_dir: Path, settings: Mapping[str, Any], engine: Mapping[str, Any] | None = None
) -> Path:
    """Record the run's settings (``run.json``) before any result is written, and the engine
    that dispatched it beside them: local and ray give the same outputs, so the engine is
    recorded but is no setting that makes a run another run."""
    record: dict[str, Any] = {"settings": dict(settings)}
    if engine is not None:
        record["engine"] = dict(engine)
    return write_json_atomic(record, run_dir / RUN_FILE)
