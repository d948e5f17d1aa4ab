"""Labels from a file (`--labels PATH`): parquet, CSV or JSONL with at least `id, na_applicable`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.label.checks import LabelingFailed
from nabench.schemas.columns import LabelColumns

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


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
            frame = pd.read_json(path, lines=suffix == ".jsonl", dtype=False)
        else:
            raise NabenchError(f"{path}: labels must be .parquet, .csv or .jsonl")
    except NabenchError:
        raise
    except Exception as exc:
        raise NabenchError(f"{path}: cannot read labels ({type(exc).__name__}: {exc})") from None
    missing = [c for c in ("id", "na_applicable") if c not in frame.columns]
    if missing:
        raise NabenchError(f"{path}: labels file lacks column(s) {', '.join(missing)}")
    frame = frame.copy()
    frame["na_applicable"] = [_as_bool(v) for v in frame["na_applicable"]]
    if frame["id"].duplicated().any():
        dup = frame.loc[frame["id"].duplicated(), "id"].iloc[0]
        raise NabenchError(f"{path}: label id {dup!r} appears more than once")
    for col in ("model", "guideline_version"):
        if col not in frame.columns:
            frame[col] = None
    return frame


def _as_bool(value: object) -> bool | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


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
