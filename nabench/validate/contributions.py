"""Validate contributed perturbations: `contributions/<name>/` folders.

A folder holds `contribution.yaml` (`ContributionHeader`), the row files it lists (JSONL or
parquet `PerturbedItem` rows) and `tests.json` golden pairs. Checks, each a named rule:

- files: safe names, no symlink out of the folder, size limits, only declared row files;
- header: YAML, every field (`schemas/contribution.py`), name equals the folder;
- rows: the row schema, every invariant of `check_perturbed`, no duplicates;
- traceability (with a source location): each id is a source row and carries its content;
- release (with `--release DIR`): no row repeats a row already released;
- golden pairs: each expected output is exactly a contributed row and follows from its
  input; with `parameters.builder` the input is re-run through that nabench builder.

Every violation names the file, the row (0-based position; JSONL line = row + 1) and the rule.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from nabench.audit.patterns import option_patterns, text_reasons
from nabench.core.bounded_read import TableLimits, read_parquet
from nabench.core.errors import NabenchError
from nabench.core.safe_load import (
    ParseLimits,
    UnsafeInput,
    decode_utf8,
    load_json,
    load_yaml,
    read_text,
)
from nabench.perturb import BUILDERS, KNOWN_NA_TEXTS, InsertsText, ItemColumns, LabelColumns
from nabench.perturb.all_of_the_above import DEFAULT_AOTA_TEXT
from nabench.schemas.contribution import ContributionHeader
from nabench.schemas.item import Item, PerturbedItem
from nabench.schemas.tables import PERTURBED_ARROW
from nabench.sources import get_source, item_table
from nabench.validate.invariants import (
    VARIANTS,
    ValidationReport,
    Violation,
    check_perturbed,
)
from nabench.validate.kinds import NA_SIDE_CONFIGS

HEADER = "contribution.yaml"
# Bounds for the parsers: a header is a page of YAML, a row a few hundred bytes of JSON.
HEADER_LIMITS = ParseLimits(max_bytes=64 * 2**10, max_nodes=5_000, max_depth=16)
ROW_LIMITS = ParseLimits(max_bytes=1 * 2**20, max_nodes=10_000, max_depth=16)
GOLDEN_LIMITS = ParseLimits(max_bytes=20 * 2**20, max_nodes=2_000_000, max_depth=16)
DATA_SUFFIXES = (".jsonl", ".parquet")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_COMPARED = ("source", "subject", "question")


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 20 * 2**20
    max_rows: int = 100_000
    max_header_bytes: int = 64 * 2**10


@dataclass(frozen=True)
class ContributionViolation(Violation):
    """A violation that may concern a whole file (row -1) rather than one row."""

    def __str__(self) -> str:
        if self.row < 0:
            return f"{self.where}: [{self.rule}] {self.message}"
        return super().__str__()


@dataclass
class _Rows:
    """Schema-valid rows of one file with their positions in the file."""

    file: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Contribution:
    """One folder whose header was read: what its row and golden pair checks work from."""

    folder: Path
    header: Any
    bad: set[str]  # relative paths not to be read (`_scan_files`)
    source: dict[str, dict[str, Any]] | None  # source rows by id; None: ids not traced
    rebuild: bool  # a usable builder is declared: rows and golden pairs are re-run


@dataclass
class _Context:
    sources: Mapping[str, str]
    release: dict[tuple[Any, ...], str] | None
    limits: Limits
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    rows: int = 0
    source_cache: dict[tuple[str, str, str | None, str], Any] = field(default_factory=dict)

    def add(self, where: str, rule: str, message: str, row: int = -1, item_id: str = "-") -> None:
        self.violations.append(ContributionViolation(where, row, item_id, rule, message))


def parse_sources(values: Iterable[str]) -> dict[str, str]:
    """`--source [DATASET=]LOCATION` values -> {dataset or '*': location}."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, location = value.partition("=")
        if sep and re.fullmatch(r"[a-z_]+", name):
            out[name] = location
        else:
            out["*"] = value
    return out


def is_contributions_dir(path: Path) -> bool:
    """A contribution folder, or a folder of them."""
    if (path / HEADER).is_file():
        return True
    return path.is_dir() and any(
        (child / HEADER).is_file() for child in path.iterdir() if child.is_dir()
    )


def contribution_folders(path: Path, ctx: _Context) -> list[Path]:
    if (path / HEADER).is_file():
        return [path]
    folders = []
    for child in sorted(path.iterdir()):
        if child.is_symlink() and child.is_dir():
            ctx.add(
                child.name,
                "folder_skipped",
                "a symlinked folder is not checked; commit the contribution itself",
            )
            continue
        if child.name.startswith(".") and child.is_dir():
            ctx.add(
                child.name,
                "folder_skipped",
                "a hidden folder is not checked; rename it "
                "(contribution names start with a letter or digit)",
            )
            continue
        if not child.is_dir():
            continue
        if (child / HEADER).is_file() or (child / HEADER).is_symlink():
            folders.append(child)
        else:
            ctx.add(child.name, "header_present", f"folder has no {HEADER}")
    return folders


def validate_contributions(
    path: Path,
    *,
    sources: Mapping[str, str] | None = None,
    release: Path | None = None,
    limits: Limits | None = None,
) -> Any:
    """Validate one contribution folder or a folder of them; returns a ValidationReport."""

    ctx = _Context(
        sources=dict(sources or {}),
        release=_release_index(release) if release is not None else None,
        limits=limits or Limits(),
    )
    for folder in contribution_folders(Path(path), ctx):
        try:
            _validate_one(folder, ctx)
        except (NabenchError, OSError, ValueError, RecursionError) as exc:
            # Whatever a hostile folder does, it is reported and the others are still checked.
            ctx.add(folder.name, "contribution_readable", f"{type(exc).__name__}: {exc}")
    if not ctx.sources:
        ctx.notes.append("source traceability not checked (no --source given)")
    if release is None:
        ctx.notes.append("duplicates against a release not checked (no --release given)")
    report = ValidationReport(files=ctx.files, rows=ctx.rows)
    report.violations.extend(ctx.violations)
    report.notes.extend(ctx.notes)
    return report


# --- files -----------------------------------------------------------------------------------


def _scan_files(folder: Path, ctx: _Context) -> set[str]:
    """Safe names, symlinks, sizes; returns the relative paths not to be read."""
    root = folder.resolve()
    bad: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath) / name
            rel = full.relative_to(folder).as_posix()
            where = f"{folder.name}/{rel}"
            if not _SAFE.match(name) or ".." in name:
                ctx.add(where, "safe_file_name", f"unsafe file name {name!r}")
                bad.add(rel)
            if full.is_symlink():
                target = Path(os.path.realpath(full))
                if target != root and root not in target.parents:
                    ctx.add(where, "symlink_escape", "symlink points outside the folder")
                    bad.add(rel)
                continue
            if full.is_file() and full.stat().st_size > ctx.limits.max_file_bytes:
                size = full.stat().st_size
                ctx.add(
                    where,
                    "size_limit",
                    f"{size} bytes exceeds the limit of {ctx.limits.max_file_bytes} bytes",
                )
                bad.add(rel)
    return bad


# --- header ----------------------------------------------------------------------------------


def _read_header(folder: Path, bad: set[str], ctx: _Context) -> Any:
    where = f"{folder.name}/{HEADER}"
    path = folder / HEADER
    if HEADER in bad:
        return None
    if not path.is_file():
        ctx.add(where, "header_present", f"missing {HEADER}")
        return None
    if path.stat().st_size > ctx.limits.max_header_bytes:
        ctx.add(where, "size_limit", f"header exceeds {ctx.limits.max_header_bytes} bytes")
        return None
    try:
        raw = load_yaml(read_text(path, HEADER_LIMITS), where, HEADER_LIMITS)
    except UnsafeInput as exc:
        ctx.add(where, "header_yaml", exc.problem)
        return None
    if not isinstance(raw, dict):
        ctx.add(where, "header_yaml", f"expected a mapping, got {type(raw).__name__}")
        return None
    unsafe_fields: set[str] = set()
    data = raw.get("data")
    entries: list[Any] = data if isinstance(data, list) else []
    for key, value in [*(("data", v) for v in entries), ("tests", raw.get("tests"))]:
        if isinstance(value, str) and (not _SAFE.match(value) or ".." in value):
            ctx.add(where, "safe_file_name", f"{key} entry {value!r} is not a plain file name")
            unsafe_fields.add(key)
    try:
        header = ContributionHeader.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            if str(err["loc"][0]) in unsafe_fields:
                continue
            ctx.add(where, f"header:{loc}", _pydantic_message(err))
        return None
    if unsafe_fields:
        return None
    if header.name != folder.name:
        ctx.add(where, "header_name", f"name {header.name!r} differs from the folder name")
        return None
    return header


def _pydantic_message(err: Mapping[str, Any]) -> str:
    value = err.get("input")
    shown = repr(value) if not isinstance(value, dict) else "{...}"
    if err.get("type") == "missing":
        return "required field is missing"
    return f"{err['msg']} (value {shown[:80]})"


# --- rows ------------------------------------------------------------------------------------


def _bounded_lines(fh: Any, max_rows: int) -> Any:
    """The file's lines, stopping after the first non-blank line past `max_rows`."""
    rows = 0
    for line in fh:
        yield line.rstrip(b"\n")
        if line.strip():
            rows += 1
            if rows > max_rows:
                return


def _read_rows(folder: Path, name: str, ctx: _Context) -> _Rows | None:
    where = f"{folder.name}/{name}"
    path = folder / name
    if not path.is_file():
        ctx.add(where, "data_file_present", "listed in the header but missing")
        return None
    if path.suffix not in DATA_SUFFIXES:
        ctx.add(where, "data_file_type", f"expected {' or '.join(DATA_SUFFIXES)}")
        return None
    raw_rows: list[Any] = []
    if path.suffix == ".jsonl":
        with path.open("rb") as fh:  # line by line: 6 M short lines split at once took 340 MB
            lines = list(_bounded_lines(fh, ctx.limits.max_rows))
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            if len(raw_rows) >= ctx.limits.max_rows:  # while reading: 6 M lines of {} took 47 s
                ctx.add(where, "size_limit", f"more than {ctx.limits.max_rows} rows")
                return None
            try:
                raw_rows.append(load_json(decode_utf8(line, where), where, ROW_LIMITS))
            except UnsafeInput as exc:
                ctx.add(where, "row_json", f"line {i + 1}: {exc.problem}", row=len(raw_rows))
                raw_rows.append(None)
    else:
        limits = TableLimits(max_rows=ctx.limits.max_rows, max_bytes=ctx.limits.max_file_bytes)
        try:  # bounded before decoding: a 52 KB parquet took 2.67 GB
            raw_rows = read_parquet(path, limits).to_pylist()
        except UnsafeInput as exc:
            ctx.add(where, "data_file_readable", exc.problem)
            return None
    ctx.files += 1
    ctx.rows += len(raw_rows)
    if len(raw_rows) > ctx.limits.max_rows:
        ctx.add(where, "size_limit", f"{len(raw_rows)} rows exceed {ctx.limits.max_rows}")
        return None
    out = _Rows(name)
    for i, raw in enumerate(raw_rows):
        if raw is None:
            continue
        item_id = str(raw.get("id", "-")) if isinstance(raw, dict) else "-"
        try:
            row = PerturbedItem.model_validate(raw).model_dump()
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "(row)"
                ctx.add(where, f"schema:{loc}", _pydantic_message(err), row=i, item_id=item_id)
            continue
        out.rows.append(row)
        out.positions.append(i)
    return out


def _invariants(folder: Path, rows: _Rows, extra: tuple[str, ...], ctx: _Context) -> None:
    import pyarrow as pa

    if not rows.rows:
        return
    table = pa.Table.from_pylist(rows.rows, schema=PERTURBED_ARROW)
    for v in check_perturbed(table, f"{folder.name}/{rows.file}", extra):
        ctx.violations.append(
            ContributionViolation(v.where, rows.positions[v.row], v.id, v.rule, v.message)
        )


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["id"], tuple(row["choices"]), row["answer"])


def _release_index(release: Path) -> dict[tuple[Any, ...], str]:
    """{(id, choices, answer): 'config/file row N'} over every perturbed config of a release."""
    import pyarrow.parquet as pq

    if not Path(release).is_dir():
        raise NabenchError(f"release {release} is not a folder")
    index: dict[tuple[Any, ...], str] = {}
    for path in sorted(Path(release).rglob("*.parquet")):
        rel = path.relative_to(release).as_posix()
        if rel.split("/")[0] in NA_SIDE_CONFIGS:  # no perturbed rows
            continue
        table = pq.read_table(path, columns=["id", "choices", "answer"])
        for i, row in enumerate(table.to_pylist()):
            index.setdefault(_row_key(row), f"{rel} row {i + 1}")
    return index


def _source_items(header: Any, ctx: _Context, where: str) -> dict[str, dict[str, Any]] | None:
    src = header.source
    location = ctx.sources.get(src.dataset) or ctx.sources.get("*")
    if location is None:
        return None
    key = (src.dataset, location, src.config, src.split)
    if key not in ctx.source_cache:
        try:
            loaded = get_source(src.dataset).load(src.split, location=location, config=src.config)
            ctx.source_cache[key] = {r["id"]: r for r in loaded.items.to_pylist()}
        except NabenchError as exc:
            ctx.source_cache[key] = exc
    cached = ctx.source_cache[key]
    if isinstance(cached, NabenchError):
        ctx.add(where, "source_load", f"cannot load the source to trace ids: {cached}")
        return None
    return dict(cached)


def _trace(row: Mapping[str, Any], source_row: Mapping[str, Any]) -> list[str]:
    """Fields where a perturbed row disagrees with its source item."""
    diffs = [f for f in _COMPARED if row[f] != source_row[f]]
    if list(row["original_choices"]) != list(source_row["choices"]):
        diffs.append("original_choices")
    if row["original_answer"] != source_row["answer"]:
        diffs.append("original_answer")
    return diffs


# --- builders and golden pairs ---------------------------------------------------------------


def rebuild(
    inputs: Sequence[Mapping[str, Any]],
    parameters: Mapping[str, Any],
    labels: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Run the nabench builder named in `parameters` on canonical items."""
    kind = parameters["builder"]
    cls = BUILDERS[kind]
    builder = cls() if kind == "original" else cls(text=parameters["na_text"])  # type: ignore[call-arg]
    columns = {
        k: [dict(i)[k] for i in inputs]
        for k in ("id", "source", "subject", "question", "choices", "answer")
    }
    label_cols = LabelColumns.from_lists(
        [r.get("na_applicable") for r in labels],
        [r.get("labeler") for r in labels],
        [r.get("guideline_version") for r in labels],
    )
    table = builder.build(
        ItemColumns.from_table(item_table(columns), label_cols), int(parameters["seed"])
    )
    out: list[dict[str, Any]] = table.to_pylist()
    return out


def _builder_problem(parameters: Mapping[str, Any]) -> str | None:
    kind = parameters.get("builder")
    if kind is None:
        return None
    if kind not in BUILDERS:
        return f"unknown builder {kind!r} (known: {', '.join(BUILDERS)})"
    if kind != "original" and not issubclass(BUILDERS[kind], InsertsText):
        # rebuilt from each row's own fields and one text: not a builder borrowing from others
        return f"builder {kind!r} cannot be rebuilt from a contribution's rows alone"
    if not isinstance(parameters.get("seed"), int):
        return "parameters.seed (an integer) is required with parameters.builder"
    if kind != "original" and not isinstance(parameters.get("na_text"), str):
        return "parameters.na_text (a string) is required with parameters.builder"
    return None


def _diff(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    fields = [k for k in expected if expected.get(k) != actual.get(k)]
    return "; ".join(f"{k}: expected {expected.get(k)!r}, got {actual.get(k)!r}" for k in fields)


# The class names show in pydantic's messages ("instance of _Case"), so they stay as they are.
class _Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: Item
    output: PerturbedItem


class _Golden(BaseModel):
    """The `tests.json` file: the variant and its golden input -> output pairs."""

    model_config = ConfigDict(extra="forbid")
    type: str
    test_cases: list[_Case]


def _read_golden(path: Path, where: str, ctx: _Context) -> _Golden | None:
    if not path.is_file():
        ctx.add(where, "golden_present", "golden pairs file is missing")
        return None
    try:
        raw = load_json(read_text(path, GOLDEN_LIMITS), where, GOLDEN_LIMITS)
    except UnsafeInput as exc:
        ctx.add(where, "golden_json", exc.problem)
        return None
    try:
        return _Golden.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            ctx.add(where, f"golden_schema:{loc}", _pydantic_message(err))
        return None


def _golden_pair_problems(
    inp: Mapping[str, Any],
    out: Mapping[str, Any],
    row: Mapping[str, Any] | None,
    made: Mapping[str, Any] | None,
    contrib: _Contribution,
) -> Iterator[tuple[str, str, str]]:
    """(rule, message, item id) for each way a golden pair fails: the output follows from the
    input, is the contributed `row` and what the builder `made`, the input is a source row."""
    oid, source = out["id"], contrib.source
    if oid != inp["id"]:
        yield "golden_traces_input", f"output id differs from input id {inp['id']!r}", oid
    elif diffs := _trace(out, inp):
        yield "golden_traces_input", "output does not carry its input's " + ", ".join(diffs), oid
    if row is None:
        yield "golden_row_missing", "expected output is not among the rows", oid
    elif row != out:
        yield "golden_row_mismatch", "row differs: " + _diff(out, row), oid
    if made is not None and made != out:
        builder = contrib.header.parameters["builder"]
        message = f"builder {builder!r} gives another output: " + _diff(out, made)
        yield "golden_pair_mismatch", message, oid
    if source is not None:
        src = source.get(inp["id"])
        if src is None:
            yield "source_id_known", "input id is not a source row", inp["id"]
        elif src != inp:
            message = "input differs from the source row: " + _diff(src, inp)
            yield "golden_input_source", message, inp["id"]


def _check_golden(contrib: _Contribution, rows: list[dict[str, Any]], ctx: _Context) -> None:
    """The golden pairs file is of the contribution's variant and every pair holds."""
    tests, parameters = contrib.header.tests, contrib.header.parameters
    if tests in contrib.bad:
        return
    where = f"{contrib.folder.name}/{tests}"
    golden = _read_golden(contrib.folder / tests, where, ctx)
    if golden is None:
        return
    expected_type = parameters.get("builder") or next((r["variant"] for r in rows), None)
    if golden.type not in VARIANTS or (expected_type and golden.type != expected_type):
        message = f"type {golden.type!r} must be the contribution's variant {expected_type!r}"
        ctx.add(where, "golden_type", message)
    if not golden.test_cases:
        ctx.add(where, "golden_present", "no test cases")
        return
    by_key = {(r["id"], r["variant"], r["na_text"]): r for r in rows}
    outputs = [c.output.model_dump() for c in golden.test_cases]
    inputs = [c.input.model_dump() for c in golden.test_cases]
    produced = rebuild(inputs, parameters, outputs) if contrib.rebuild else None
    for i, (inp, out) in enumerate(zip(inputs, outputs, strict=True)):
        row = by_key.get((out["id"], out["variant"], out["na_text"]))
        made = produced[i] if produced is not None else None
        for rule, message, item_id in _golden_pair_problems(inp, out, row, made, contrib):
            ctx.add(where, rule, message, i, item_id)


def _inserted_reason(variant: Any) -> str | None:
    """The audit reason the text a variant inserts is flagged for (its builder's own; None
    for a variant inserting no phrasing, or an unknown one)."""
    builder = BUILDERS.get(str(variant))
    return builder.inserted_reason if builder is not None else None


def _recognised(text: str, variant: Any) -> bool:
    """Is `text` a phrasing of the kind `variant` inserts (by the audit's own patterns)?"""
    wanted = _inserted_reason(variant)
    reasons = text_reasons(text)
    return wanted in reasons if wanted else bool(reasons)


def _check_na_texts(where: str, header: Any, rows: _Rows, ctx: _Context) -> None:
    """Each row's NA text is a known phrasing, or the declared one, and either way one the
    audit recognises: a distractor replaced by "Jupiter" is not an NA variant."""
    declared = header.parameters.get("na_text")
    verdicts: dict[tuple[str, str], bool] = {}
    for row, pos in zip(rows.rows, rows.positions, strict=True):
        text, variant = row.get("na_text"), row["variant"]
        reason = _inserted_reason(variant)
        if reason is None:
            continue
        if text is None:
            continue  # na_exactly_once reports it
        key = (text, variant)
        if key not in verdicts:
            known = text in (*KNOWN_NA_TEXTS, DEFAULT_AOTA_TEXT) or text == declared
            verdicts[key] = known and _recognised(text, variant)
        if not verdicts[key]:
            ctx.add(
                where,
                "na_text_recognised",
                f"na_text {text!r} is neither a known phrasing nor a declared one the audit "
                f"recognises as {reason}",
                pos,
                row["id"],
            )


def _check_rebuild(where: str, header: Any, rows: _Rows, ctx: _Context) -> None:
    """With a declared builder, every row (not only the golden pairs) is rebuilt from its own
    source fields and must come out identical."""
    inputs = [
        {
            "id": r["id"],
            "source": r["source"],
            "subject": r["subject"],
            "question": r["question"],
            "choices": r["original_choices"],
            "answer": r["original_answer"],
        }
        for r in rows.rows
    ]
    produced = rebuild(inputs, header.parameters, rows.rows)
    builder = header.parameters["builder"]
    for row, pos, made in zip(rows.rows, rows.positions, produced, strict=True):
        if made != row:
            ctx.add(
                where,
                "row_rebuild_mismatch",
                f"builder {builder!r} gives another row: " + _diff(made, row),
                pos,
                row["id"],
            )


def _check_undeclared_files(folder: Path, header: Any, bad: set[str], ctx: _Context) -> None:
    """A row file the header does not list would go unchecked, so it is a violation."""
    declared = set(header.data)
    for path in sorted(folder.iterdir()):
        if path.suffix in DATA_SUFFIXES and path.name not in declared and path.name not in bad:
            ctx.add(
                f"{folder.name}/{path.name}",
                "data_file_declared",
                f"row file not listed in {HEADER} 'data'",
            )


def _check_parameters(folder: Path, header: Any, ctx: _Context) -> bool:
    """A usable builder and a recognised NA text; True when the rows are to be rebuilt."""
    where = f"{folder.name}/{HEADER}"
    problem = _builder_problem(header.parameters)
    if problem:
        ctx.add(where, "header:parameters", problem)
    declared_na = header.parameters.get("na_text")
    if isinstance(declared_na, str) and not _recognised(
        declared_na, header.parameters.get("builder")
    ):
        ctx.add(
            where,
            "na_text_recognised",
            f"parameters.na_text {declared_na!r} is not an NA / all-of-the-above phrasing "
            f"the audit recognises ({option_patterns().manifest()['file']})",
        )
    return problem is None and "builder" in header.parameters


def _row_problems(
    row: Mapping[str, Any],
    first_seen: str,
    here: str,
    contrib: _Contribution,
    release: Mapping[tuple[Any, ...], str] | None,
) -> Iterator[tuple[str, str]]:
    """(rule, message) for each way a row fails the checks beyond its own file: its dataset,
    a duplicate (seen first at `first_seen`, not `here`), a released row, its source item."""
    source, declared = contrib.source, contrib.header.source
    dataset = declared.dataset
    if row["source"] != dataset or not row["id"].startswith(f"{dataset}/"):
        yield "id_source", f"row is not from the header's source {dataset!r}"
    if first_seen != here:
        yield "duplicate_in_contribution", f"same row as {first_seen}"
    if release is not None and _row_key(row) in release:
        yield "duplicate_of_release", f"already released as {release[_row_key(row)]}"
    if source is not None:
        src = source.get(row["id"])
        if src is None:
            split = f"{declared.config or 'default'}/{declared.split}"
            yield "source_id_known", f"id is not a row of {dataset} {split}"
        elif diffs := _trace(row, src):
            yield "source_row_matches", "row disagrees with its source item on " + ", ".join(diffs)


def _check_row_files(contrib: _Contribution, ctx: _Context) -> list[dict[str, Any]]:
    """Every listed row file, row by row; returns the schema-valid rows of all files."""
    folder, header = contrib.folder, contrib.header
    na_text = header.parameters.get("na_text")
    extra = (na_text,) if isinstance(na_text, str) else ()
    all_rows: list[dict[str, Any]] = []
    # (id, variant, na_text, choices) -> "file row N" of its first occurrence, across files
    seen: dict[tuple[Any, ...], str] = {}
    for name in header.data:
        if name in contrib.bad:
            continue
        rows = _read_rows(folder, name, ctx)
        if rows is None:
            continue
        where = f"{folder.name}/{name}"
        _invariants(folder, rows, extra, ctx)
        _check_na_texts(where, header, rows, ctx)
        if contrib.rebuild:
            _check_rebuild(where, header, rows, ctx)
        for row, pos in zip(rows.rows, rows.positions, strict=True):
            here = f"{name} row {pos + 1}"
            key = (row["id"], row["variant"], row["na_text"], tuple(row["choices"]))
            first_seen = seen.setdefault(key, here)
            for rule, message in _row_problems(row, first_seen, here, contrib, ctx.release):
                ctx.add(where, rule, message, pos, row["id"])
        all_rows.extend(rows.rows)
    return all_rows


def _validate_one(folder: Path, ctx: _Context) -> None:
    bad = _scan_files(folder, ctx)
    header = _read_header(folder, bad, ctx)
    if header is None:
        return
    _check_undeclared_files(folder, header, bad, ctx)
    rebuild_rows = _check_parameters(folder, header, ctx)
    source = _source_items(header, ctx, f"{folder.name}/{HEADER}")
    contrib = _Contribution(folder, header, bad, source, rebuild_rows)
    _check_golden(contrib, _check_row_files(contrib, ctx), ctx)


def main(argv: list[str] | None = None) -> None:
    """`python -m nabench.validate.contributions DIR [--source ...] [--release DIR]`."""
    import click

    @click.command()
    @click.argument("path", type=click.Path(path_type=Path, exists=True))
    @click.option("--source", "sources", multiple=True, metavar="[DATASET=]LOCATION")
    @click.option("--release", type=click.Path(path_type=Path, exists=True, file_okay=False))
    @click.option("--max-file-mb", type=float, default=20.0, show_default=True)
    def cmd(path: Path, sources: tuple[str, ...], release: Path | None, max_file_mb: float) -> None:
        report = validate_contributions(
            path,
            sources=parse_sources(sources),
            release=release,
            limits=Limits(max_file_bytes=int(max_file_mb * 2**20)),
        )
        for line in report.notes:
            click.echo(line)
        for v in report.violations:
            click.echo(str(v), err=True)
        if report.violations:
            click.echo(f"FAILED: {len(report.violations)} violation(s)", err=True)
            raise SystemExit(1)
        click.echo(f"OK: {report.rows} row(s) in {report.files} file(s), 0 violations")

    cmd.main(args=argv, prog_name="nabench-validate-contributions")


if __name__ == "__main__":
    main()
