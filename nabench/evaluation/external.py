"""Results of other harnesses as nabench results: lm-eval ``--log_samples`` and inspect logs.

Each reader turns one harness run of one nabench config into an :class:`ExternalRun`: a
summary row (what ``nabench report`` reads from ``*.summary.json``) and the per-item
responses table of ``nabench eval`` (``id, config, model, subject, raw_output, parsed,
gold, correct, invalid, score, confidence, n_choices``), keyed by the nabench item id.

* **lm-eval** (an ``--output_path`` folder, or one ``results_*.json``): the task's
  ``metadata.nabench_config`` (written by nabench's task export) names the config; each
  line of ``samples_<task>_<date>.jsonl`` holds the row (``doc``) and, for
  ``multiple_choice``, one ``[loglik, is_greedy]`` per option: the prediction is the
  highest log-likelihood (ties: earliest, as ``acc``), the confidence its softmax share.
  ``generate_until`` tasks: the filtered letter, ``[invalid]`` when none.
* **inspect** (a ``.eval`` log or a folder of them): the ``choice`` scorer's answer
  letter per sample; the config and id come from the sample metadata that
  ``nabench/mcq`` writes.

Unanswered items score 0 (both harnesses count them wrong), so the accuracy equals the
harness's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nabench.core.errors import NabenchError
from nabench.core.safe_load import ParseLimits, load_json, load_json_file
from nabench.evaluation.parsing import INVALID
from nabench.llm import weights_fingerprint

__all__ = [
    "ExternalRun",
    "is_external",
    "read_external",
    "read_inspect_log",
    "read_lm_eval",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
INVALID_CREDIT = 0.0
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ExternalRun:
    """One harness run of one config: its summary row and per-item responses."""

    run: str
    config: str
    summary: dict[str, Any]
    responses: pd.DataFrame


# lm-eval's results JSON carries every task's config; samples lines are one item each.
HARNESS_LIMITS = ParseLimits(max_bytes=256 * 2**20, max_nodes=20_000_000, max_depth=64)


def _slug(text: str) -> str:
    return _SLUG.sub("_", text).strip("_.") or "model"


def _responses(
    where: Path,
    ids: Sequence[str],
    config: str,
    model: str,
    subjects: Sequence[str | None],
    raw: Sequence[str],
    codes: np.ndarray,
    gold: np.ndarray,
    n_choices: np.ndarray,
    confidence: np.ndarray,
) -> pd.DataFrame:
    """A harness log's answers as nabench's responses frame; every gold answer must index
    one of its item's options (-1 picked `LETTERS[-1]`, gold 'Z', and was scored)."""
    bad = np.flatnonzero((gold < 0) | (gold >= n_choices))
    if len(bad):
        i = int(bad[0])
        raise NabenchError(
            f"{where}: sample {ids[i]!r} has answer {int(gold[i])}, not an option index "
            f"0..{int(n_choices[i]) - 1}" + (f" ({len(bad)} such samples)" if len(bad) > 1 else "")
        )
    invalid = codes == INVALID
    correct = codes == gold
    score = np.where(invalid, INVALID_CREDIT, correct.astype(np.float64))
    return pd.DataFrame(
        {
            "id": list(ids),
            "config": config,
            "model": model,
            "subject": pd.Series(list(subjects), dtype=object),
            "raw_output": pd.Series(list(raw), dtype=object),
            "parsed": pd.Series(
                [None if c == INVALID else LETTERS[c] for c in codes.tolist()], dtype=object
            ),
            "gold": [LETTERS[g] for g in gold.tolist()],
            "correct": correct,
            "invalid": invalid,
            "score": score,
            "confidence": confidence,
            "n_choices": n_choices,
        }
    )


def _summary(run: str, model: str, config: str, mode: str, backend: str, **extra: Any) -> dict:
    return {
        "run": run,
        "model": model,
        "mode": mode,
        "backend": backend,
        "config": config,
        "kind": "mc",
        "invalid_credit": INVALID_CREDIT,
        **extra,
    }


# ----------------------------------------------------------------------------- lm-eval


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                sample = load_json(line, f"{path}:{n}", HARNESS_LIMITS)
                if not isinstance(sample, dict):
                    raise NabenchError(f"{path}:{n}: not an lm-eval sample (no JSON object)")
                yield sample


def _lm_eval_item(sample: dict[str, Any], generative: bool) -> tuple[int, float, str]:
    """(predicted option or INVALID, confidence, raw output) of one lm-eval sample."""
    doc = sample["doc"]
    k = len(doc["choices"])
    resps = sample["filtered_resps"]
    if generative:
        text = str(resps[0] if resps else "")
        letter = text.strip().strip("().")
        code = LETTERS.index(letter) if len(letter) == 1 and letter in LETTERS[:k] else INVALID
        return code, float("nan"), text
    lls = np.array([float(r[0]) for r in resps], dtype=np.float64)
    if len(lls) != k:
        raise NabenchError(
            f"lm-eval sample {doc.get('id')!r}: {len(lls)} log-likelihoods, {k} options"
        )
    if not np.isfinite(lls).all():  # argmax over NaN picks option A; +inf wins any item
        raise NabenchError(
            f"lm-eval sample {doc.get('id')!r}: log-likelihoods {lls.tolist()} are not all "
            "finite numbers"
        )
    code = int(np.argmax(lls))
    w = np.exp(lls - lls.max())
    return code, float(w[code] / w.sum()), json.dumps(lls.tolist())


def _lm_eval_task(
    results_file: Path,
    task: str,
    cfg: dict[str, Any],
    model: str,
    backend: str,
    revision: str | None = None,
) -> ExternalRun:
    meta = cfg.get("metadata") or {}
    config = meta.get("nabench_config")
    if not config:
        raise NabenchError(f"{results_file}: task {task!r} is no nabench task (no nabench_config)")
    generative = cfg.get("output_type") == "generate_until"
    stamp = results_file.stem.removeprefix("results_")
    samples_file = results_file.with_name(f"samples_{task}_{stamp}.jsonl")
    if not samples_file.is_file():
        raise NabenchError(
            f"{results_file}: no {samples_file.name}; run lm-eval with --log_samples"
        )
    ids, subjects, raw, codes, gold, nch, conf = [], [], [], [], [], [], []
    for s in _read_jsonl(samples_file):
        code, c, text = _lm_eval_item(s, generative)
        doc = s["doc"]
        ids.append(str(doc["id"]))
        subjects.append(doc.get("subject"))
        raw.append(text)
        codes.append(code)
        conf.append(c)
        answer, k = doc["answer"], len(doc["choices"])
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < k:
            # -1 indexed the letters from the end and was scored against gold 'Z'
            raise NabenchError(
                f"{samples_file}: sample {doc.get('id')!r} has answer {answer!r}, not an "
                f"option index 0..{k - 1}"
            )
        gold.append(answer)
        nch.append(k)
    mode = "generate" if generative else "loglik"
    run = f"lm-eval__{_slug(model)}" + ("__gen" if generative else "")
    df = _responses(
        samples_file,
        ids,
        config,
        model,
        subjects,
        raw,
        np.array(codes, np.int64),
        np.array(gold, np.int64),
        np.array(nch, np.int64),
        np.array(conf),
    )
    summary = _summary(
        run,
        model,
        config,
        mode,
        backend,
        harness="lm-eval",
        task=task,
        source_file=str(samples_file),
        model_revision=revision,
    )
    return ExternalRun(run, config, summary, df)


def _lm_eval_model(res: dict[str, Any]) -> str:
    """The model: the last part of ``pretrained=`` (a folder or Hub id), else lm-eval's model
    type (``gguf``; its ``model_name`` is then a random string)."""
    config = res.get("config") or {}
    args = config.get("model_args")
    pretrained = args.get("pretrained") if isinstance(args, dict) else None
    if pretrained:
        return Path(str(pretrained)).name if Path(str(pretrained)).exists() else str(pretrained)
    return str(config.get("model") or "model")


def _lm_eval_revision(res: dict[str, Any]) -> str | None:
    """Which weights an lm-eval run used: the Hub commit lm-eval records (``model_sha``),
    else the content fingerprint of a local ``pretrained=`` folder found here (nabench's
    own, `nabench.llm.weights_fingerprint`), else an explicit ``revision=`` model arg;
    None where the log tells nothing (a server model, a GGUF behind an API)."""
    config = res.get("config") or {}
    sha = config.get("model_sha")
    if isinstance(sha, str) and sha:
        return sha
    args = config.get("model_args")
    args = args if isinstance(args, dict) else {}
    pretrained = args.get("pretrained")
    if pretrained and Path(str(pretrained)).exists():
        try:
            return weights_fingerprint(str(pretrained))
        except NabenchError:
            pass  # a folder without model files: nothing to tell by
    revision = args.get("revision")
    return str(revision) if revision else None


def read_lm_eval(path: Path) -> list[ExternalRun]:
    """Every nabench task of the lm-eval results under ``path`` (a results JSON or folder)."""
    files = [path] if path.is_file() else sorted(path.rglob("results_*.json"))
    runs: list[ExternalRun] = []
    for f in files:
        res = load_json_file(f, HARNESS_LIMITS)  # depth and size bounded, one line if bad
        if not isinstance(res, dict):
            raise NabenchError(f"{f}: not an lm-eval results file (no JSON object)")
        meta = res.get("config") or {}
        model = _lm_eval_model(res)
        backend = f"lm-eval/{meta.get('model', '?')}"
        revision = _lm_eval_revision(res)
        for task, cfg in (res.get("configs") or {}).items():
            if (cfg.get("metadata") or {}).get("nabench_config"):
                runs.append(_lm_eval_task(f, task, cfg, model, backend, revision))
    if not runs:
        raise NabenchError(f"{path}: no lm-eval results of nabench tasks (results_*.json)")
    return runs


# ----------------------------------------------------------------------------- inspect


def read_inspect_log(path: Path) -> list[ExternalRun]:
    """One run per nabench config in an inspect ``.eval`` log written by ``nabench/mcq``."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise NabenchError(
            f"{path}: reading inspect logs needs inspect_ai: pip install 'nabench[harness]'"
        ) from None

    log = read_eval_log(str(path))
    if log.status != "success" or not log.samples:
        raise NabenchError(f"{path}: inspect log status {log.status!r} with no samples")
    model = str(log.eval.model)
    by_config: dict[str, list[Any]] = {}
    for sample in log.samples:
        meta = sample.metadata or {}
        if "nabench_id" not in meta:
            raise NabenchError(f"{path}: sample {sample.id!r} lacks nabench metadata")
        by_config.setdefault(str(meta["config"]), []).append(sample)
    run = f"inspect__{_slug(model)}"
    out = []
    for config, samples in by_config.items():
        codes, raw = [], []
        for s in samples:
            score = next(iter((s.scores or {}).values()), None)
            answer = (score.answer or "") if score is not None else ""
            k = len(s.choices or [])
            codes.append(LETTERS.index(answer) if answer in LETTERS[:k] and answer else INVALID)
            raw.append(s.output.completion if s.output is not None else "")
        metas = [s.metadata for s in samples]
        df = _responses(
            path,
            [str(m["nabench_id"]) for m in metas],
            config,
            model,
            [m.get("subject") for m in metas],
            raw,
            np.array(codes, np.int64),
            np.array([int(m["answer"]) for m in metas], np.int64),
            np.array([len(s.choices or []) for s in samples], np.int64),
            np.full(len(samples), np.nan),
        )
        summary = _summary(
            run, model, config, "generate", "inspect", harness="inspect", source_file=str(path)
        )
        out.append(ExternalRun(run, config, summary, df))
    return out


# ------------------------------------------------------------------------------ dispatch


def _inspect_logs(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if path.suffix == ".eval" else []
    return sorted(path.glob("*.eval"))


def is_external(path: Path) -> bool:
    """True for an inspect log (folder) or an lm-eval results JSON (folder)."""
    path = Path(path)
    if _inspect_logs(path):
        return True
    if path.is_file():
        return path.name.startswith("results_") and path.suffix == ".json"
    return path.is_dir() and next(path.rglob("results_*.json"), None) is not None


def read_external(path: Path) -> list[ExternalRun]:
    """The runs of an inspect log / lm-eval results path (see :func:`is_external`)."""
    path = Path(path)
    logs = _inspect_logs(path)
    if logs:
        return [r for log in logs for r in read_inspect_log(log)]
    return read_lm_eval(path)
