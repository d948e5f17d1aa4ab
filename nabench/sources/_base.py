"""What every source loader shares: reading a split from a Hub id or a local Hub-layout folder."""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from nabench.errors import SourceError
from nabench.schemas.tables import ITEM_ARROW

_FILE_BUILDERS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "json", ".json": "json"}


@dataclass(frozen=True)
class LoadedSplit:
    """Canonical items of one split plus where they came from."""

    items: pa.Table
    split: str
    origin: str
    fingerprint: str
    files: dict[str, str] = field(default_factory=dict)


def item_table(columns: dict[str, list[Any]]) -> pa.Table:
    """Build a canonical item table from Python columns (types enforced by the schema)."""
    return pa.Table.from_pydict(columns, schema=ITEM_ARROW)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _local_data_files(path: Path, config: str | None, split: str) -> list[Path]:
    """Files `datasets` would read for this split (for the fingerprint)."""
    if path.is_file():
        return [path]
    import datasets

    try:
        has_card = (path / "README.md").is_file()
        builder = datasets.load_dataset_builder(str(path), config if has_card else None)
        files = builder.config.data_files.get(split, []) if builder.config.data_files else []
    except Exception:  # fingerprint is best effort; loading reports real errors
        files = []
    return [Path(str(f)) for f in files]


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

    path = Path(location).expanduser()
    files: dict[str, str] = {}
    try:
        if path.is_file():
            builder = _FILE_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise SourceError(f"{path}: unsupported file type {path.suffix!r}")
            ds = datasets.load_dataset(builder, data_files=str(path), split="train")
            origin = str(path.resolve())
        elif path.is_dir():
            # A folder without a Hub card has only the `default` config (files named by split).
            has_card = (path / "README.md").is_file()
            ds = datasets.load_dataset(str(path), config if has_card else None, split=split)
            origin = str(path.resolve())
        elif (
            location.startswith((".", "/", "~")) or os.sep in location.strip("/").split("/", 1)[-1]
        ):
            raise SourceError(f"source path {location!r} does not exist")
        else:
            ds = datasets.load_dataset(
                location, config, split=split, revision=revision, token=os.environ.get("HF_TOKEN")
            )
            origin = f"hf://datasets/{location}" + (f"@{revision}" if revision else "")
    except SourceError:
        raise
    except ValueError as exc:  # datasets raises ValueError for unknown configs / splits
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SourceError(f"cannot load split {split!r} of {location!r}: {first}") from exc
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SourceError(f"cannot load {location!r} ({type(exc).__name__}): {first}") from exc
    if path.exists():
        for f in _local_data_files(path, config, split):
            if f.is_file():
                files[
                    f.name if path.is_file() else str(f.resolve().relative_to(path.resolve()))
                ] = _sha256(f)
        fingerprint = hashlib.sha256(
            "".join(f"{k}:{v}\n" for k, v in sorted(files.items())).encode()
        ).hexdigest()
    else:
        fingerprint = f"{revision or 'main'}:{ds._fingerprint}"
    return ds.data.table.combine_chunks(), origin, fingerprint, files


def require_columns(table: pa.Table, needed: Sequence[str], origin: str) -> None:
    missing = [c for c in needed if c not in table.column_names]
    if missing:
        raise SourceError(
            f"{origin}: missing column(s) {', '.join(map(repr, missing))} "
            f"(found: {', '.join(table.column_names)})"
        )


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
        raw, origin, fingerprint, files = read_split(
            location or self.hub_id, config, split, revision
        )
        items = self.to_items(raw, config=config, split=split, seed=seed, origin=origin)
        return LoadedSplit(items, split, origin, fingerprint, files)

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


def check_answers(
    ids: list[str], answers: list[int | None], n_choices: list[int], origin: str
) -> None:
    """Answers must point at an existing choice: a corrupt key is an error, not a quarantine."""
    for item_id, ans, n in zip(ids, answers, n_choices, strict=True):
        if ans is None or not 0 <= ans < n:
            raise SourceError(
                f"{origin}: row {item_id}: answer {ans!r} is out of range for {n} choices"
            )
