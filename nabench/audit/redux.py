"""MMLU-Redux as an audit source: annotations joined to MMLU items, flagged items quarantined.

Redux has no MMLU index, so a Redux row is joined to the items of its subject whose question
and choices are equal after the audit's `normalise` (NFKC, whitespace collapsed, lower-cased):
the same comparison every other audit rule uses. An item whose Redux `error_type` is one of
the recipe's `flag` types is quarantined as `redux_<error_type>`; every matched item's
annotation (flagged or not, `expert` included) goes to the build's `redux` config, and the
join count and the Redux rows that matched no item go to build.json.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nabench.audit.patterns import normalise
from nabench.core.errors import SourceError, first_line
from nabench.core.portable import hub_miss_note, require_location
from nabench.schemas.kinds import arrow_schema
from nabench.schemas.redux import ERROR_TYPES, REDUX_OPTIONAL, REDUX_REQUIRED, ReduxSpec
from nabench.sources import read_split, require_columns

_LOCAL_SUFFIXES = (".parquet", ".jsonl")
_SHOWN = 80  # characters of an unmatched row's question in build.json


@dataclass(frozen=True)
class ReduxRows:
    """The Redux rows of the subjects a build uses, with where they were read from."""

    table: pa.Table  # subject, row, question, choices, error_type, + REDUX_OPTIONAL
    origin: str
    fingerprints: dict[str, str]  # subject -> fingerprint of what was read
    missing_subjects: list[str]  # subjects of the build Redux has no rows for


def load_redux(spec: ReduxSpec, subjects: Iterable[str]) -> ReduxRows:
    """Read Redux for `subjects`: per subject config of a Hub id or Hub-layout folder, or
    `<subject>/*.parquet|*.jsonl` of a plain folder."""
    wanted = sorted(set(subjects))
    require_location(spec.location, SourceError, "audit.redux: ", folder=True)
    path = Path(spec.location).expanduser()
    if path.is_dir() and not (path / "README.md").is_file():
        available = {p.name for p in path.iterdir() if p.is_dir()}
        origin = str(path.resolve())
    else:
        available = set(_config_names(spec))
        origin = str(path.resolve()) if path.is_dir() else f"hf://datasets/{spec.location}"
    parts, fingerprints = [], {}
    for subject in (s for s in wanted if s in available):
        table, fingerprints[subject] = _read_subject(spec, path, subject)
        parts.append(_canonical(table, subject, f"{spec.location} [{subject}]"))
    table = pa.concat_tables(parts) if parts else _canonical(_empty(), "", spec.location)
    missing = [s for s in wanted if s not in available]
    return ReduxRows(table, origin, fingerprints, missing)


def _config_names(spec: ReduxSpec) -> list[str]:
    import datasets

    try:
        names: list[str] = datasets.get_dataset_config_names(spec.location, revision=spec.revision)
    except Exception as exc:  # datasets raises many types for a missing / unreachable repo
        first = first_line(exc)
        note = hub_miss_note(spec.location)
        raise SourceError(f"audit.redux: cannot read {spec.location!r}: {first}{note}") from None
    return names


def _read_subject(spec: ReduxSpec, path: Path, subject: str) -> tuple[pa.Table, str]:
    """One subject's rows and a fingerprint of them, through `sources.read_split`."""
    if path.is_dir() and not (path / "README.md").is_file():
        files = sorted(f for f in (path / subject).iterdir() if f.suffix in _LOCAL_SUFFIXES)
        if not files:
            raise SourceError(f"audit.redux: {path / subject} holds no .parquet or .jsonl file")
        _require_rows(files)
        read = [read_split(str(f), None, "train") for f in files]
        digest = ",".join(f"{f.name}:{r[2][:16]}" for f, r in zip(files, read, strict=True))
        return pa.concat_tables([r[0] for r in read], promote_options="default"), digest
    if path.is_dir():
        _require_rows(_hub_layout_files(path, subject, spec.split))
    table, _, fingerprint, _ = read_split(spec.location, subject, spec.split, spec.revision)
    if table.num_rows == 0:
        raise SourceError(
            f"audit.redux: {spec.location} [{subject}] has no rows in split {spec.split!r}"
        )
    return table, fingerprint


def _hub_layout_files(path: Path, subject: str, split: str) -> list[Path]:
    """The data files a Hub-layout folder's card gives `subject`'s `split` (none when the
    card cannot be resolved: `read_split` then says what is wrong)."""
    import datasets

    try:
        builder = datasets.load_dataset_builder(str(path), subject)
    except Exception:  # datasets raises many types for a bad card; read_split reports it
        return []
    return [Path(str(f)) for f in (builder.config.data_files or {}).get(split, [])]


def _require_rows(files: Iterable[Path]) -> None:
    """Refuse a Redux data file without rows: an empty or truncated copy, which `datasets`
    reports only as a failed generation (a parquet file) or a split with no data (JSON lines)."""
    import pyarrow.parquet as pq

    for f in files:
        if f.suffix == ".parquet":
            try:
                empty = pq.read_metadata(f).num_rows == 0
            except (OSError, pa.ArrowInvalid):
                continue  # not parquet: read_split reports it
        elif f.suffix == ".jsonl":
            with f.open(encoding="utf-8", errors="replace") as lines:
                empty = not any(line.strip() for line in lines)
        else:
            continue
        if empty:
            raise SourceError(f"audit.redux: {f} has no rows")


def _empty() -> pa.Table:
    return pa.table(
        {
            "question": pa.array([], pa.string()),
            "choices": pa.array([], pa.list_(pa.string())),
            "error_type": pa.array([], pa.string()),
        }
    )


def _canonical(raw: pa.Table, subject: str, origin: str) -> pa.Table:
    """Redux's columns checked and typed, with the subject and the row number added."""
    require_columns(
        raw,
        REDUX_REQUIRED,
        origin,
        {"question": "text", "choices": "text_list", "error_type": "text"},
    )
    unknown = sorted(set(raw.column("error_type").drop_null().to_pylist()) - set(ERROR_TYPES))
    if unknown or raw.column("error_type").null_count:
        raise SourceError(
            f"{origin}: unknown error_type value(s) {unknown or ['null']} "
            f"(known: {', '.join(ERROR_TYPES)})"
        )
    n = raw.num_rows
    columns: dict[str, Any] = {
        "subject": pa.array([subject] * n, pa.string()),
        "row": pa.array(np.arange(n), pa.int64()),
        "question": raw.column("question").cast(pa.string()),
        "choices": raw.column("choices").cast(pa.list_(pa.string())),
        "error_type": raw.column("error_type").cast(pa.string()),
    }
    for name in REDUX_OPTIONAL:  # Redux 2.0 has them; an older copy may lack one
        value = raw.column(name) if name in raw.column_names else pa.nulls(n, pa.string())
        columns[name] = pc.cast(value, pa.string())
    return pa.table(columns)


def join_keys(subjects: pa.Array, questions: pa.Array, choices: pa.Array) -> list[str | None]:
    """The join key of each row: subject + normalised question + normalised choices (None
    when the question or a choice is missing: such a row joins nothing)."""
    flat = pc.list_flatten(choices)
    options = normalise(flat).to_pylist()
    offsets = pc.list_value_length(choices).fill_null(0).to_numpy(zero_copy_only=False)
    starts = np.concatenate([[0], np.cumsum(offsets)])
    keys: list[str | None] = []
    for i, (subject, question) in enumerate(
        zip(subjects.to_pylist(), normalise(questions).to_pylist(), strict=True)
    ):
        row = options[starts[i] : starts[i + 1]]
        if question is None or choices[i].as_py() is None or any(o is None for o in row):
            keys.append(None)
        else:
            keys.append("\x1f".join([str(subject), question, *row]))
    return keys


@dataclass
class ReduxAudit:
    """Redux rows of one build, joined split by split; `summary` is build.json's `redux`.

    Subjects are read the first time a split holds them (every MMLU split has the same 57)."""

    spec: ReduxSpec
    parts: list[ReduxRows] = field(default_factory=list)
    matched_rows: set[int] = field(default_factory=set)  # positions in `table`
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # split -> error_type -> n
    duplicates: int = 0  # Redux rows whose key an earlier row already has
    used_subjects: set[str] = field(default_factory=set)  # of the items the build uses

    def __post_init__(self) -> None:
        self.table = _canonical(_empty(), "", self.spec.location)
        self._seen: set[str] = set()
        self._by_key: dict[str, int] = {}

    def _ensure(self, subjects: Iterable[str | None]) -> None:
        new = sorted({s for s in subjects if s is not None} - self._seen)
        if not new:
            return
        rows = load_redux(self.spec, new)
        if self.table.num_rows == 0 and rows.table.num_rows == 0:
            # The first call holds the whole split's subjects (the donor-pool pass): Redux
            # lacking some is recorded (`missing_subjects`), lacking all is a wrong location.
            raise SourceError(
                f"audit.redux: {self.spec.location} has no rows for any of the {len(new)} "
                f"subject(s) of the build (a subject folder or config named like {new[0]!r}): "
                "the build would have no Redux annotation"
            )
        self._seen.update(new)
        self.parts.append(rows)
        offset = self.table.num_rows
        t = rows.table
        for pos, key in enumerate(join_keys(t["subject"], t["question"], t["choices"])):
            if key is None:
                continue
            if key in self._by_key:
                self.duplicates += 1
            else:
                self._by_key[key] = offset + pos
        self.table = pa.concat_tables([self.table, t])

    def join(self, items: pa.Table, split: str | None) -> tuple[dict[str, np.ndarray], pa.Table]:
        """(quarantine flags per `redux_<type>` reason, annotations) of `items`; a split
        name counts the join into `summary` (None: a donor-pool pass, not reported)."""
        self._ensure(items["subject"].to_pylist())
        keys = join_keys(items["subject"], items["question"], items["choices"])
        hits = [self._by_key.get(k) if k is not None else None for k in keys]
        matched = [i for i, h in enumerate(hits) if h is not None]
        positions = [int(h) for h in hits if h is not None]
        found = self.table.take(pa.array(positions, pa.int64()))
        types = found["error_type"].to_pylist()
        flags = {f"redux_{t}": np.zeros(items.num_rows, dtype=bool) for t in self.spec.flag}
        for i, error_type in zip(matched, types, strict=True):
            if error_type in self.spec.flag:
                flags[f"redux_{error_type}"][i] = True
        if split is not None:
            self.used_subjects.update(s for s in items["subject"].to_pylist() if s is not None)
            self.matched_rows.update(positions)
            per = self.counts.setdefault(split, {})
            for error_type in types:
                per[error_type] = per.get(error_type, 0) + 1
        annotations = pa.table(
            {
                "id": items["id"].take(pa.array(matched, pa.int64())),
                "subject": found["subject"],
                "error_type": found["error_type"],
                "flagged": pa.array([t in self.spec.flag for t in types], pa.bool_()),
                "annotation_source": found["source"],
                "correct_answer": found["correct_answer"],
                "potential_reason": found["potential_reason"],
            }
        )
        return flags, annotations.cast(arrow_schema("redux_annotation"))

    def summary(self) -> dict[str, Any]:
        """build.json's `redux`: what was read, the join count, and the unmatched rows."""
        t = self.table
        # Rows of subjects the build uses: a --limit build also reads the other subjects,
        # for the donor pool, but their rows could not match an item of the build.
        used = [s in self.used_subjects for s in t["subject"].to_pylist()]
        unmatched = [p for p in range(t.num_rows) if used[p] and p not in self.matched_rows]
        shown = t.select(["subject", "row", "question", "error_type"]).take(
            pa.array(unmatched, pa.int64())
        )
        return {
            "location": self.spec.location,
            "revision": self.spec.revision,
            "split": self.spec.split,
            "origin": self.parts[0].origin if self.parts else None,
            "fingerprints": {k: v for p in self.parts for k, v in p.fingerprints.items()},
            "flag": list(self.spec.flag),
            "rows": sum(used),
            "joined": len(self.matched_rows),
            "duplicate_rows": self.duplicates,
            "by_split": {s: dict(sorted(c.items())) for s, c in self.counts.items()},
            "missing_subjects": sorted(
                s for p in self.parts for s in p.missing_subjects if s in self.used_subjects
            ),
            "unmatched": [
                {**r, "question": (r["question"] or "")[:_SHOWN]} for r in shown.to_pylist()
            ],
        }


def flagged_total(summary: Mapping[str, Any]) -> int:
    """Items a Redux summary quarantined (matched items whose type is flagged)."""
    flag = set(summary["flag"])
    return sum(n for per in summary["by_split"].values() for t, n in per.items() if t in flag)


def read_annotations(path: Path) -> dict[str, str]:
    """item id -> Redux error_type, from a build folder's `redux` config or one of its files."""
    import pyarrow.parquet as pq

    files = sorted((path / "redux").glob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise SourceError(f"{path}: no redux config (the build was made without audit.redux)")
    out: dict[str, str] = {}
    for f in files:
        try:
            table = pq.read_table(f, columns=["id", "error_type"])
        except (OSError, ValueError, KeyError, pa.ArrowInvalid) as exc:
            first = first_line(exc)
            raise SourceError(f"{f}: not a redux annotation file ({first})") from None
        out.update(zip(table["id"].to_pylist(), table["error_type"].to_pylist(), strict=True))
    return out
