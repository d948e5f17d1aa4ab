"""Items of one config, ready to produce answers for (the first step of `nabench eval`).

Row kinds:

* ``mc``: NA builds (question, choices, answer).
* ``letter``: artifact configs with a letter ``target`` (full, choices_only, mem_*):
  the row's own ``prompt``/``stop`` as a raw completion prompt.
* ``prior``: artifact configs with ``choice_index`` (prior_choice*): one True/False
  prompt per option, scored per item.

Each item carries its source item id (``source_id``: the row's ``item_id`` where the
config has one, else its ``id``), so the report pairs a variant's rows with the
``original`` row of the same source item and resamples whole items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from nabench.core.errors import NabenchError
from nabench.evaluation.prompts import LETTERS
from nabench.evaluation.strategies import ItemBatch
from nabench.sources.sample import check_sample_size, stratified_sample

__all__ = ["EvalItems", "RowKind", "build_items"]

RowKind = Literal["mc", "letter", "prior"]


@dataclass(frozen=True)
class EvalItems:
    """One config's rows, ready to produce answers for.

    ``batch`` has one entry per item. ``rows`` are the prompt rows: one per item for
    ``mc``/``letter``; one per (item, option) for ``prior``, with ``row_item`` mapping
    each row to its item position and ``row_option`` to its option index.
    """

    config: str
    kind: RowKind
    batch: ItemBatch
    subjects: tuple[str | None, ...]
    rows: pd.DataFrame
    row_item: NDArray[np.int64]
    row_option: NDArray[np.int64]
    source_ids: tuple[str, ...] = ()  # per item; empty means the item ids
    # Per item: no question to ask (a `qi_step2` row kept without an inferred question, the
    # `artifacts-paper` protocol): never sent to the model, scored as an invalid answer.
    not_asked: NDArray[np.bool_] | None = None

    @property
    def asked_rows(self) -> NDArray[np.bool_]:
        """Per prompt row: whether it is sent (its item has a question to ask)."""
        if self.not_asked is None:
            return np.ones(len(self.rows), dtype=bool)
        return ~self.not_asked[self.row_item]

    @property
    def n_choices(self) -> NDArray[np.int64]:
        return np.fromiter((len(c) for c in self.batch.choices), np.int64, count=len(self.batch))


def _row_kind(config: str, df: pd.DataFrame) -> RowKind:
    if "prompt" not in df.columns:
        missing = {"id", "question", "choices", "answer"} - set(df.columns)
        if missing:
            raise NabenchError(f"config {config!r} lacks column(s) {sorted(missing)}")
        return "mc"
    if "target" not in df.columns or df["target"].isna().all():
        raise NabenchError(f"config {config!r} has no targets to score against (not evaluable)")
    if "choice_index" in df.columns and df["choice_index"].notna().all():
        return "prior"
    return "letter"


def _source_ids(df: pd.DataFrame, ids: list[str]) -> tuple[str, ...]:
    if "item_id" in df.columns and df["item_id"].notna().all():
        return tuple(df["item_id"].astype(str))
    return tuple(ids)


QI_STEP2 = "qi_step2"


def _not_asked(df: pd.DataFrame) -> NDArray[np.bool_] | None:
    """Step-2 rows without an inferred question (null ``inserted_question``)."""
    if "inserted_question" not in df.columns or "prompt_type" not in df.columns:
        return None
    mask = (df["prompt_type"] == QI_STEP2).to_numpy(bool) & df[
        "inserted_question"
    ].isna().to_numpy()
    return mask if mask.any() else None


def _subjects(df: pd.DataFrame) -> tuple[str | None, ...]:
    if "subject" not in df.columns:
        return (None,) * len(df)
    return tuple(None if pd.isna(s) else str(s) for s in df["subject"])


EVAL_SAMPLE_SEED = 0  # `eval --sample`: the draw is build's (seed, "sample", id), seed 0


def sample_rows(df: pd.DataFrame, n: int, config: str) -> pd.DataFrame:
    """The rows of `n` items drawn as `build --sample` draws them (stratified by subject, the
    smallest per-item hash first), in row order. The draw depends on the ids alone, so every
    config of a build samples the same source items and stays paired with `original`."""
    key = "item_id" if "item_id" in df.columns else "id"
    first = df.drop_duplicates(key)
    check_sample_size(n, len(first), f"items of config {config}", "evaluate")
    ids = first[key].astype(str).tolist()
    positions = stratified_sample(ids, list(_subjects(first)), n, EVAL_SAMPLE_SEED)
    chosen = {ids[i] for i in positions}
    return df[df[key].astype(str).isin(chosen)]


def build_items(config: str, df: pd.DataFrame, limit: int | None = None) -> EvalItems:
    """Items of a config's rows (first ``limit`` items; for prior configs whole items)."""
    kind = _row_kind(config, df)
    if kind == "prior":
        item_ids = list(dict.fromkeys(df["item_id"].astype(str)))
        if limit is not None:
            keep = set(item_ids[:limit])
            item_ids = item_ids[:limit]
            df = df[df["item_id"].astype(str).isin(keep)]
        df = df.reset_index(drop=True)
        pos = {iid: i for i, iid in enumerate(item_ids)}
        first = df.drop_duplicates("item_id").set_index("item_id").loc[item_ids]
        choices = [tuple(str(c) for c in cs) for cs in first["choices"]]
        row_item = df["item_id"].astype(str).map(pos).to_numpy(np.int64)
        row_option = df["choice_index"].to_numpy(np.int64)
        counts = np.bincount(row_item, minlength=len(item_ids))
        want = np.array([len(c) for c in choices])
        if not np.array_equal(counts, want):
            raise NabenchError(f"config {config!r}: an item lacks one prompt per option")
        batch = ItemBatch.from_lists(item_ids, choices, first["answer"].to_numpy(np.int64))
        return EvalItems(
            config,
            kind,
            batch,
            _subjects(first.reset_index()),
            df,
            row_item,
            row_option,
            tuple(item_ids),
        )
    if limit is not None:
        df = df.iloc[:limit]
    df = df.reset_index(drop=True)
    ids = df["id"].astype(str).tolist()
    if len(set(ids)) != len(ids):
        raise NabenchError(f"config {config!r} has duplicate ids")
    choices = [tuple(str(c) for c in cs) for cs in df["choices"]]
    if kind == "mc":
        gold = df["answer"].to_numpy(np.int64)
    else:
        targets = df["target"].astype(str).str.strip().str.strip("()")
        bad = ~targets.isin(list(LETTERS))
        if bad.any():
            raise NabenchError(f"config {config!r}: target {targets[bad].iloc[0]!r} is no letter")
        gold = targets.map(LETTERS.index).to_numpy(np.int64)
    batch = ItemBatch.from_lists(ids, choices, gold)
    n = len(ids)
    return EvalItems(
        config,
        kind,
        batch,
        _subjects(df),
        df,
        np.arange(n),
        np.full(n, -1, dtype=np.int64),
        _source_ids(df, ids),
        _not_asked(df) if kind == "letter" else None,
    )
