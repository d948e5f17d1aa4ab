"""Option phrasings the audit quarantines, kept as versioned data (`option_patterns.yaml`).

Every comparison runs on `normalise`d text (NFKC, zero-width characters removed, whitespace
collapsed, trailing punctuation trimmed, lower-cased unless a pattern is case-sensitive), so
"Ｎｏｎｅ of the above" and "None\u200b of the above" read as "none of the above". Matching
uses Arrow's RE2 kernels over the flattened options of a whole split; single strings go
through the same kernels, so the audit, the validator and the contribution checks agree.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.core.safe_load import load_yaml_file

PATTERNS_FILE = Path(__file__).with_name("option_patterns.yaml")
PATTERN_REASONS = ("has_none_option", "has_all_option", "refers_to_other_options")
# Zero-width and invisible formatting characters that NFKC keeps.
_INVISIBLE = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\ufeff]"
)


@dataclass(frozen=True)
class OptionPattern:
    id: str
    reason: str
    regex: str
    case_sensitive: bool = False


@dataclass(frozen=True)
class PatternSet:
    """The patterns of one version of `option_patterns.yaml`."""

    version: str
    sha256: str
    patterns: tuple[OptionPattern, ...]

    def for_reason(self, reason: str) -> tuple[OptionPattern, ...]:
        return tuple(p for p in self.patterns if p.reason == reason)

    def manifest(self) -> dict[str, Any]:
        """What a build manifest and card record about the patterns it was audited with."""
        return {
            "file": "nabench/audit/option_patterns.yaml",
            "version": self.version,
            "sha256": self.sha256,
            "patterns": {r: [p.id for p in self.for_reason(r)] for r in PATTERN_REASONS},
        }


def _parse(raw: Any, sha256: str) -> PatternSet:
    where = PATTERNS_FILE.name
    if not isinstance(raw, dict) or not isinstance(raw.get("reasons"), dict):
        raise ValueError(f"{where}: expected `version` and a `reasons` mapping")
    patterns: list[OptionPattern] = []
    for reason, entries in raw["reasons"].items():
        if reason not in PATTERN_REASONS:
            raise ValueError(f"{where}: unknown reason {reason!r}")
        for entry in entries:
            pattern = OptionPattern(
                id=str(entry["id"]),
                reason=reason,
                regex=str(entry["regex"]),
                case_sensitive=bool(entry.get("case_sensitive", False)),
            )
            pc.match_substring_regex(pa.array([""]), pattern.regex)  # RE2 must accept it
            patterns.append(pattern)
    return PatternSet(str(raw["version"]), sha256, tuple(patterns))


@functools.cache
def option_patterns() -> PatternSet:
    """The shipped patterns (loaded once per process)."""
    sha = hashlib.sha256(PATTERNS_FILE.read_bytes()).hexdigest()
    return _parse(load_yaml_file(PATTERNS_FILE), sha)


def _normalise(values: pa.Array | pa.ChunkedArray, *, fold: bool = True) -> pa.Array:
    out = pc.utf8_normalize(values, "NFKC")
    out = pc.replace_substring_regex(out, _INVISIBLE, "")
    out = pc.replace_substring_regex(out, r"\s+", " ")
    out = pc.utf8_rtrim(pc.utf8_trim_whitespace(out), characters=".!?;: ")
    return pc.utf8_lower(out) if fold else out


class _TextCache:
    """`normalise` and the pattern flags of each distinct option text, computed once per
    process: a build audits the source options, then validates each config, and every config
    repeats the same options (45,073 distinct of 56,168 in MMLU test); computing them per
    config made validation 3 s of a 4.8 s build. Deterministic per text, so a cache is safe."""

    LIMIT = 2_000_000  # distinct texts kept before starting over (memory bound)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        null = pa.nulls(1, pa.string())  # entry 0: a null option (normalises to null, no flag)
        self.texts, self.folded, self.cased = null, null, null
        self.flags = {r: np.zeros(1, dtype=bool) for r in PATTERN_REASONS}

    def index(self, options: pa.Array) -> tuple[np.ndarray, _TextCache]:
        """Each option's entry (computing the new ones); the entry arrays stay valid for the
        caller even if another call starts the cache over."""
        with self._lock:
            idx = pc.index_in(options, value_set=self.texts)
            new = pc.unique(pc.drop_null(pc.filter(options, pc.is_null(idx))))
            if len(new):
                if len(self.texts) + len(new) > self.LIMIT:
                    self._reset()
                    new = pc.unique(pc.drop_null(options))
                self._add(new)
                idx = pc.index_in(options, value_set=self.texts)
            snapshot = _TextCache.__new__(_TextCache)
            snapshot.texts, snapshot.folded, snapshot.cased = self.texts, self.folded, self.cased
            snapshot.flags = self.flags
            return idx.to_numpy(zero_copy_only=False).astype(np.int64), snapshot

    def _add(self, new: pa.Array) -> None:
        folded, cased = _normalise(new), _normalise(new, fold=False)
        for reason in PATTERN_REASONS:
            mask = np.zeros(len(new), dtype=bool)
            for p in option_patterns().for_reason(reason):
                hit = pc.match_substring_regex(cased if p.case_sensitive else folded, p.regex)
                mask |= np.asarray(hit.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
            self.flags[reason] = np.concatenate([self.flags[reason], mask])
        self.texts = pa.concat_arrays([self.texts, new])
        self.folded = pa.concat_arrays([self.folded, folded])
        self.cased = pa.concat_arrays([self.cased, cased])


_CACHE = _TextCache()


def clear_text_cache() -> None:
    """Forget every cached text (benchmarks start each build cold, as a CLI build does)."""
    with _CACHE._lock:
        _CACHE._reset()


def normalise(values: pa.Array | pa.ChunkedArray, *, fold: bool = True) -> pa.Array:
    """Options as compared by the audit and the validators (see the module docstring)."""
    options = _flat_strings(values)
    idx, entries = _CACHE.index(options)
    return (entries.folded if fold else entries.cased).take(pa.array(idx))


def _flat_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    return values.cast(pa.string())


def normalise_text(text: str, *, fold: bool = True) -> str:
    """`normalise` of one string."""
    value: str = _normalise(pa.array([text], pa.string()), fold=fold)[0].as_py()  # no cache
    return value


def flag_options(
    options: pa.Array, phrases: Mapping[str, Iterable[str]] | None = None
) -> dict[str, np.ndarray]:
    """Per reason, which options are flagged: a pattern matches, or (per reason) the option
    equals one of `phrases` (the texts a recipe inserts) after normalisation."""
    patterns, hits = flag_options_and_phrases(options, phrases or {})
    return {reason: mask | hits[reason] for reason, mask in patterns.items()}


def flag_options_and_phrases(
    options: pa.Array, phrases: Mapping[str, Iterable[str]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(per reason, which options a pattern flags; per reason, which equal one of `phrases`
    after normalisation), from one pass over the options."""
    idx, entries = _CACHE.index(_flat_strings(options))
    patterns = {reason: entries.flags[reason][idx] for reason in PATTERN_REASONS}
    return patterns, _phrase_hits(entries.folded.take(pa.array(idx)), phrases)


def _phrase_hits(folded: pa.Array, phrases: Mapping[str, Iterable[str]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for reason in PATTERN_REASONS:
        extra = sorted({normalise_text(t) for t in phrases.get(reason, ())})
        hit = np.zeros(len(folded), dtype=bool)
        if extra:
            found = pc.is_in(folded, value_set=pa.array(extra, pa.string()))
            hit |= np.asarray(found.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        out[reason] = hit
    return out


def text_reasons(text: str, phrases: Mapping[str, Iterable[str]] | None = None) -> list[str]:
    """The pattern reasons one option text is flagged for ([] for content)."""
    flags = flag_options(pa.array([text], pa.string()), phrases)
    return [r for r in PATTERN_REASONS if flags[r][0]]


def any_flagged(
    options: pa.Array, phrases: Mapping[str, Sequence[str]] | None = None
) -> np.ndarray:
    """Which options are flagged for any pattern reason."""
    flags = flag_options(options, phrases)
    return np.logical_or.reduce([flags[r] for r in PATTERN_REASONS])
