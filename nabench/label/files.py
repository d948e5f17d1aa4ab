"""Labels from a file (`--labels PATH`): parquet, CSV or JSONL with at least `id, na_applicable`.

`na_applicable` holds booleans: parquet / JSON booleans, CSV `true` / `false` (any case), and
null or an empty CSV cell for no label (an invalid label). Anything else (0/1, yes/no, a
float, text in a parquet or JSON file) is refused, never read as a boolean. A CSV's ids and
cells are trimmed of surrounding spaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from nabench.core.errors import NabenchError, first_line
from nabench.label.checks import LabelingFailed
from nabench.schemas.columns import LabelColumns

_CSV_BOOLS: dict[str, bool | None] = {"true": True, "false": False, "": None}
_EXPECTED = "expected booleans (true or false; null or an empty CSV cell for no label)"


def read_labels(path: Path) -> pd.DataFrame:
    """Read a labels file: `id`, `na_applicable` (True/False/None) and provenance columns."""
    if not path.is_file():
        raise NabenchError(f"labels file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif suffix in {".jsonl", ".json"}:
            frame = pd.read_json(path, lines=suffix == ".jsonl", dtype=False, encoding="utf-8-sig")
        else:
            raise NabenchError(f"{path}: labels must be .parquet, .csv or .jsonl")
    except NabenchError:
        raise
    except Exception as exc:
        why = f"{type(exc).__name__}: {first_line(exc)}"  # pandas' ParserError ends in a newline
        raise NabenchError(f"{path}: cannot read labels ({why})") from None
    return check_labels(frame, path, csv=suffix == ".csv")


def check_labels(frame: pd.DataFrame, path: Path | str, csv: bool = False) -> pd.DataFrame:
    """The labels `frame` as every reader takes it (agree, build --labels, validate): ids
    distinct, non-blank text; `na_applicable` True/False/None; one error line otherwise."""
    missing = [c for c in ("id", "na_applicable") if c not in frame.columns]
    if missing:
        raise NabenchError(f"{path}: labels file lacks column(s) {', '.join(missing)}")
    frame = frame.copy()
    if csv:  # a CSV cell is text: trimmed, as its booleans are (hand-edited ids)
        frame["id"] = frame["id"].str.strip()
    bad = [i for i, v in enumerate(frame["id"]) if not isinstance(v, str) or not v.strip()]
    if bad:  # no item has that id: the label would go unused in silence
        shown = frame["id"].iloc[bad[0]]
        null = shown is None or (isinstance(shown, float) and np.isnan(shown))  # NaN: JSON null
        shown = "null" if null else repr(shown)
        raise NabenchError(f"{path}: row {bad[0] + 1} has id {shown}; a label needs its item's id")
    frame["na_applicable"] = _booleans(path, frame, text=csv)
    if frame["id"].duplicated().any():
        dup = frame.loc[frame["id"].duplicated(), "id"].iloc[0]
        raise NabenchError(f"{path}: label id {dup!r} appears more than once")
    for col in ("model", "guideline_version"):
        if col not in frame.columns:
            frame[col] = None
    return frame


def _booleans(path: Path | str, frame: pd.DataFrame, text: bool) -> list[bool | None]:
    """`na_applicable` as True / False / None; the first value that is no boolean is refused
    with the file, the column, the value and its row's id."""
    out: list[bool | None] = []
    for item_id, value in zip(frame["id"], frame["na_applicable"], strict=True):
        try:
            out.append(_as_bool(value, text))
        except ValueError:
            raise NabenchError(
                f"{path}: column na_applicable holds {_describe(value)} (id {item_id!r}); "
                f"{_EXPECTED}"
            ) from None
    return out


def _as_bool(value: object, text: bool) -> bool | None:
    """True / False / None (no label); ValueError for anything else. `text`: a CSV cell."""
    if text:
        cell = str(value).strip().lower()
        if cell not in _CSV_BOOLS:
            raise ValueError(value)
        return _CSV_BOOLS[cell]
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(value)


def _describe(value: object) -> str:
    """A value as an error shows it: `the number 1.0`, `text 'yes'`, `list [1]`."""
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    if isinstance(value, str):
        return f"text {value!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class LabelSplit:
    """Eligible items after labels: kept rows, label columns and per-reason quarantine masks."""

    kept: pa.Table
    labels: LabelColumns
    flags: dict[str, np.ndarray]
    candidates: pa.Table


def apply_labels(items: pa.Table, labels: pd.DataFrame) -> LabelSplit:
    """Keep NA-applicable items; flag missing, invalid and not-applicable ones for quarantine."""
    ids = pd.Series(items.column("id").to_pylist())
    indexed = labels.set_index("id")
    found = ids.isin(indexed.index).to_numpy()
    value = ids.map(indexed["na_applicable"]).to_numpy(dtype=object)
    missing = ~found
    invalid = found & np.array([v is None or v is pd.NA for v in value], dtype=bool)
    not_app = found & np.array([v is False for v in value], dtype=bool)
    keep = ~(missing | invalid | not_app)
    kept = items.filter(pa.array(keep))
    kept_ids = ids[keep]

    def prov(col: str) -> list[str | None]:
        return [None if pd.isna(v) else str(v) for v in kept_ids.map(indexed[col])]

    label_cols = LabelColumns.from_lists(
        [True] * int(keep.sum()), prov("model"), prov("guideline_version")
    )
    return LabelSplit(
        kept=kept,
        labels=label_cols,
        flags={"missing_label": missing, "invalid_label": invalid, "not_na_applicable": not_app},
        candidates=items,
    )


def check_coverage(result: LabelSplit, where: str, origin: str) -> None:
    """Refuse labels that label nothing: no eligible id has a label, or every label is invalid.

    Either would build a benchmark with every item quarantined; that is a mistake (a labels
    file of another source or split, a model that never produced valid output), not data.
    """
    n = result.candidates.num_rows
    if n == 0:
        return
    missing = int(result.flags["missing_label"].sum())
    invalid = int(result.flags["invalid_label"].sum())
    if missing == n:
        first = result.candidates.column("id")[0].as_py()
        raise LabelingFailed(
            f"{origin}: none of the {n} eligible item(s) of {where} has a label (ids such as "
            f"{first!r}); nothing was built: use labels made for this source, config and split"
        )
    if missing + invalid == n:
        raise LabelingFailed(
            f"{origin}: all {n - missing} label(s) of {where} are invalid (no output parsed); "
            "nothing was built: check the labeler model and its raw output "
            "(`nabench label ... --out labels.parquet`)"
        )
