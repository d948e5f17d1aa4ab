"""What every source loader shares: reading a split from a Hub id or a local Hub-layout folder."""

from __future__ import annotations

import hashlib
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from nabench.core.arrow import repeated_values
from nabench.core.errors import SourceError, first_line
from nabench.core.portable import hub_miss_note, require_location
from nabench.core.rng import Draw
from nabench.schemas.tables import ITEM_ARROW

_FILE_BUILDERS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "json", ".json": "json"}
# Local files are re-read every time: `datasets` keys its cache of a local folder by the
# folder's name, so an edited folder, or another one of the same name, read stale rows.
_FRESH = "force_redownload"


@dataclass(frozen=True)
class LoadedSplit:
    """Canonical items of one split plus where they came from."""

    items: pa.Table
    split: str
    origin: str
    fingerprint: str
    files: dict[str, str] = field(default_factory=dict)


def item_table(columns: dict[str, Any], origin: str = "source") -> pa.Table:
    """Build a canonical item table from Python columns (types enforced by the schema).

    A column of the wrong type (numbers where text belongs, text where the answer index
    belongs) is a one-line SourceError naming the column, not an Arrow traceback.
    """
    arrays = {}
    for field_ in ITEM_ARROW:
        value = columns[field_.name]
        if not isinstance(value, list) and _numbers_as_text(value.type, field_.type):
            # Arrow would cast 1..4 to "1".."4": a numeric column is no text (issue 17)
            raise SourceError(
                f"{origin}: column for {field_.name!r} has type {value.type}, "
                f"expected {field_.type} (numbers are not read as text)"
            )
        try:
            arrays[field_.name] = (
                pa.array(value, type=field_.type)
                if isinstance(value, list)
                else value.cast(field_.type)
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            found = getattr(value, "type", None)
            raise SourceError(
                f"{origin}: column for {field_.name!r} has type {found or 'unknown'}, "
                f"expected {field_.type} ({str(exc).splitlines()[0][:120]})"
            ) from None
    return pa.Table.from_pydict(arrays, schema=ITEM_ARROW)


def _numbers_as_text(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether casting `found` to `wanted` would turn numbers (or booleans) into text."""
    if pa.types.is_list(wanted) or pa.types.is_large_list(wanted):
        if not (pa.types.is_list(found) or pa.types.is_large_list(found)):
            return False
        found, wanted = found.value_type, wanted.value_type
    numeric = (
        pa.types.is_integer(found) or pa.types.is_floating(found) or pa.types.is_boolean(found)
    )
    return bool(_is_text(wanted) and numeric)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_split(
    location: str,
    config: str | None,
    split: str,
    revision: str | None = None,
) -> tuple[pa.Table, str, str, dict[str, str]]:
    """Read one split with `datasets`: (arrow table, origin, fingerprint, {file: sha256}).

    `location` is a local folder in the Hub repository layout, a single data file
    (csv/parquet/jsonl, read as one split), or a Hub dataset id.
    """
    import datasets

    require_location(location, SourceError)
    path = Path(location).expanduser()
    data_files: list[Path] = []
    try:
        if path.is_file():
            builder_name = _FILE_BUILDERS.get(path.suffix.lower())
            if builder_name is None:
                raise SourceError(f"{path}: unsupported file type {path.suffix!r}")
            if path.stat().st_size == 0:  # `datasets` says StopIteration or "0 bytes"
                raise SourceError(f"{path}: the file is empty")
            ds = datasets.load_dataset(
                builder_name, data_files=str(path), split="train", download_mode=_FRESH
            )
            data_files = [path]
        elif path.is_dir():
            # A folder without a Hub card has only the `default` config (files named by split).
            has_card = (path / "README.md").is_file()
            builder = datasets.load_dataset_builder(str(path), config if has_card else None)
            builder.download_and_prepare(download_mode=_FRESH)
            ds = builder.as_dataset(split=split)
            resolved = builder.config.data_files or {}
            data_files = [Path(str(f)) for f in resolved.get(split, [])]
        else:
            ds = datasets.load_dataset(
                location, config, split=split, revision=revision, token=os.environ.get("HF_TOKEN")
            )
    except SourceError:
        raise
    except ValueError as exc:  # datasets raises ValueError for unknown configs / splits
        first = first_line(exc)
        if path.is_file() and "corresponds to no data" in first:  # a header-only CSV
            raise SourceError(f"{path}: the file holds no rows") from None
        raise SourceError(f"cannot load split {split!r} of {location!r}: {first}") from exc
    except Exception as exc:
        first = first_line(exc)
        raise SourceError(
            f"cannot load {location!r} ({type(exc).__name__}): {first}{hub_miss_note(location)}"
        ) from exc
    table = ds.data.table.combine_chunks()
    _check_file_types(data_files, table)
    if path.exists():
        origin = str(path.resolve())
        root = path.resolve() if path.is_dir() else path.resolve().parent
        files = {str(f.resolve().relative_to(root)): _sha256(f) for f in data_files if f.is_file()}
        fingerprint = hashlib.sha256(
            "".join(f"{k}:{v}\n" for k, v in sorted(files.items())).encode()
        ).hexdigest()
    else:
        origin = f"hf://datasets/{location}" + (f"@{revision}" if revision else "")
        files = {}
        fingerprint = f"{revision or 'main'}:{ds._fingerprint}"
    return table, origin, fingerprint, files


# Split words a file's name may start with (Hub shards `<split>-00000-of-00001.parquet`, or
# `<split>.jsonl`), each with the split names it may stand for.
_SPLIT_WORDS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("train", "training"), frozenset({"train", "training"})),
    **dict.fromkeys(("validation", "valid", "val"), frozenset({"validation", "valid", "val"})),
    **dict.fromkeys(
        ("test", "testing", "eval", "evaluation"),
        frozenset({"test", "testing", "eval", "evaluation"}),
    ),
    "dev": frozenset({"dev"}),  # MMLU's dev is not its validation split
    "auxiliary_train": frozenset({"auxiliary_train"}),
}


def _split_named(path: Path) -> str | None:
    """The split a single data file's name names, or None (`gpqa_main.csv` names none)."""
    stem = path.name.split(".", 1)[0]
    word = re.sub(r"-\d+-of-\d+$", "", stem).lower()
    return word if word in _SPLIT_WORDS else None


def check_file_split(path: Path, split: str, splits: Sequence[str]) -> None:
    """A single data file read as `split` must be named for it (unless `splits`, the source's,
    are that one): the items' ids name the split (`mmlu/all/test/00000`), so validation rows
    read from `validation-...parquet` or `mydata.parquet` as split test got test items' ids."""
    if not path.is_file():
        return
    named = _split_named(path)
    if named is None and len(splits) > 1:
        raise SourceError(
            f"{path}: the file's name names no split, and the built ids name the split: "
            f"rename it {split}{path.suffix} to read it as split {split!r}"
        )
    if named is not None and split not in _SPLIT_WORDS[named]:
        raise SourceError(
            f"{path}: the file's name says split {named!r}, but split {split!r} is being "
            f"read from it; pass the {split} file (or --split {named})"
        )


def _check_file_types(data_files: Sequence[Path], table: pa.Table) -> None:
    """A card's `dataset_info` makes `datasets` cast the data files' columns to its features:
    choices stored as numbers [1, 2, 3, 4] were built as the options '1'..'4' of every item.
    Each data file's own column types are checked against what was loaded: a parquet file's
    footer, a JSON file's types as Arrow infers them from the whole file."""
    loaded = table.schema
    for f in data_files:
        own = _own_schema(f, loaded.names)
        if own is None:
            continue
        for name in loaded.names:
            if name in own.names and _numbers_as_text(
                own.field(name).type, loaded.field(name).type
            ):
                raise SourceError(
                    f"{f}: column {name!r} holds {own.field(name).type} but the card declares "
                    f"{loaded.field(name).type} (numbers are not read as text)"
                )


def _own_schema(f: Path, names: Sequence[str]) -> pa.Schema | None:
    """The column types a data file itself holds (None: not parquet or JSON); of a JSON
    array, those of the columns `names` (the ones the source loaded)."""
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    suffix = f.suffix.lower()
    if not f.is_file() or suffix not in {".parquet", ".json", ".jsonl"}:
        return None
    try:
        if suffix == ".parquet":
            return pq.read_schema(f)
        # The whole file (`datasets` has read it already): a column's type is that of every
        # block, a null-only start included; the first block's alone hid a later change.
        return pa_json.read_json(f).schema
    except (OSError, pa.ArrowException) as exc:
        if suffix == ".parquet":
            raise SourceError(f"{f}: not a readable parquet file ({exc})") from None
    # pyarrow refused the file (a JSON array; a column changing type; a list after a null
    # start): each column the source loaded is typed from all its records instead.
    return _json_records_schema(f, names)


def _json_records(f: Path) -> list[dict[str, Any]] | None:
    """The records of a JSON file: an array of records, or JSON Lines (None: neither)."""
    try:
        text = f.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    try:
        records = json.loads(text)
    except ValueError:
        try:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            return None
    if isinstance(records, dict):  # JSON Lines of one record
        records = [records]
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        return None
    return records


def _json_records_schema(f: Path, names: Sequence[str]) -> pa.Schema | None:
    """The types of columns `names` of a JSON file, as Arrow infers each from every record
    (None: no records). A column holding values of two types is refused, naming it."""
    records = _json_records(f)
    if records is None:
        return None
    fields = []
    for name in names:
        if not any(name in r for r in records):
            continue
        try:
            fields.append(pa.field(name, pa.array([r.get(name) for r in records]).type))
        except pa.ArrowException:
            kinds = sorted({type(r[name]).__name__ for r in records if r.get(name) is not None})
            raise SourceError(
                f"{f}: column {name!r} holds values of more than one type ({', '.join(kinds)})"
            ) from None
    return pa.schema(fields)


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_text_list(t: pa.DataType) -> bool:
    is_list = pa.types.is_list(t) or pa.types.is_large_list(t)
    return bool(is_list and (_is_text(t.value_type) or pa.types.is_null(t.value_type)))


# Column kinds a source may require: name -> (test of the Arrow type, what it should be).
COLUMN_KINDS: dict[str, tuple[Callable[[pa.DataType], bool], str]] = {
    "text": (_is_text, "text"),
    "int": (lambda t: bool(pa.types.is_integer(t)), "an integer"),
    "text_list": (_is_text_list, "a list of text"),
}


def require_columns(
    table: pa.Table,
    needed: Sequence[str],
    origin: str,
    kinds: Mapping[str, str] | None = None,
) -> None:
    """Every column a source maps must be there and hold data.

    `datasets` fills a column the card's `dataset_info` declares but the data files lack
    with nulls, so an entirely null column counts as missing: building from it would give
    rows without a question (or subject) and report no violation.
    """
    absent = [c for c in needed if c not in table.column_names]
    empty = [
        c
        for c in needed
        if c in table.column_names
        and table.num_rows > 0
        and table.column(c).null_count == table.num_rows
    ]
    if absent or empty:
        parts = []
        if absent:
            parts.append(f"missing column(s) {', '.join(map(repr, absent))}")
        if empty:
            parts.append(
                f"column(s) {', '.join(map(repr, empty))} missing from the data files "
                "(entirely null)"
            )
        present = [c for c in table.column_names if c not in empty]
        raise SourceError(f"{origin}: {'; '.join(parts)} (found: {', '.join(present)})")
    for name, kind in (kinds or {}).items():
        test, wanted = COLUMN_KINDS[kind]
        found = table.schema.field(name).type
        if not test(found):
            raise SourceError(f"{origin}: column {name!r} should be {wanted}, found {found}")


class Source(ABC):
    """One benchmark: how to read it and how its rows map onto canonical items."""

    name: ClassVar[str]
    hub_id: ClassVar[str]
    default_config: ClassVar[str | None]
    splits: ClassVar[tuple[str, ...]]
    license: ClassVar[str]
    pretty_name: ClassVar[str]
    citation: ClassVar[str]
    language: ClassVar[str] = "en"
    # The card's field table says what the item fields hold for this source (the generic
    # descriptions of `schemas.item` name every source at once).
    field_notes: ClassVar[Mapping[str, str]] = {}
    # Per-item draws the loader itself makes (GPQA's option shuffle), stated on the card.
    draws: ClassVar[tuple[Draw, ...]] = ()

    def load(
        self,
        split: str,
        *,
        location: str | None = None,
        config: str | None = None,
        revision: str | None = None,
        seed: int = 0,
    ) -> LoadedSplit:
        config = config or self.default_config
        self.check_split(split)
        if location is not None:
            check_file_split(Path(location).expanduser(), split, self.splits)
        raw, origin, fingerprint, files = read_split(
            location or self.hub_id, config, split, revision
        )
        items = self.to_items(raw, config=config, split=split, seed=seed, origin=origin)
        check_unique_ids(items.column("id"), origin)
        return LoadedSplit(items, split, origin, fingerprint, files)

    def record_id(self, item_id: str) -> str:
        """The source record an item is made from: the item itself, unless the source's
        configs share records (GPQA's nest), where items of one record share this."""
        return item_id

    def check_split(self, split: str) -> None:
        if split not in self.splits:
            raise SourceError(
                f"{self.name}: unknown split {split!r} (known: {', '.join(self.splits)})"
            )

    @abstractmethod
    def to_items(
        self, raw: pa.Table, *, config: str | None, split: str, seed: int, origin: str
    ) -> pa.Table:
        """Map the source's own columns onto canonical items."""


def check_answers(ids: list[str], answers: pa.Array, choices: pa.Array, origin: str) -> None:
    """Answers must point at an existing choice: a corrupt key is an error, not a quarantine."""
    import numpy as np
    import pyarrow.compute as pc

    lengths = pc.list_value_length(choices).fill_null(0).to_numpy(zero_copy_only=False)
    values = pc.fill_null(answers.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero((values < 0) | (values >= lengths))
    if len(bad):
        i = int(bad[0])
        shown = answers[i].as_py()
        raise SourceError(
            f"{origin}: row {ids[i]}: answer {shown!r} is out of range for {lengths[i]} choices"
            + (f" ({len(bad)} such rows)" if len(bad) > 1 else "")
        )


def check_unique_ids(ids: pa.ChunkedArray | pa.Array, origin: str) -> None:
    """Every row of a split has its own id (configs are paired by it): a repeated id is a
    corrupt source, one error naming it, not a schema violation per row of every config."""
    n, first, count = repeated_values(ids)
    if n:
        raise SourceError(
            f"{origin}: id {first!r} is repeated ({count} rows)"
            + (f"; {n} ids are repeated" if n > 1 else "")
            + " (each row of a split needs its own id)"
        )


def native_ids(raw: pa.Table, column: str, origin: str) -> list[Any]:
    """A source's own item ids, every one there: a null or blank id is a corrupt row (an ARC
    row was built as `arc_challenge/test/None`, a HellaSwag one failed as an internal error)."""
    values = raw.column(column).to_pylist()
    bad = [i for i, v in enumerate(values) if v is None or (isinstance(v, str) and not v.strip())]
    if bad:
        what = "null" if values[bad[0]] is None else "blank"
        raise SourceError(
            f"{origin}: row {bad[0]} (counting from 0): {column!r} is {what}"
            + (f" ({len(bad)} rows lack one)" if len(bad) > 1 else "")
        )
    return values


def check_present(
    ids: list[str], values: pa.Array | pa.ChunkedArray, column: str, origin: str
) -> None:
    """A column every row of this source has (MMLU's subject): a null in it is a corrupt
    row, an error. Built, it would sit under no subject and outside every MMLU category, and
    no `exclude_subjects` could exclude it. (A blank value is the source's own: MMLU's
    auxiliary_train has subject '' in every row.)"""
    import numpy as np

    bad = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
    if len(bad):
        raise SourceError(
            f"{origin}: row {ids[int(bad[0])]}: {column!r} is null"
            + (f" ({len(bad)} such rows)" if len(bad) > 1 else "")
        )
