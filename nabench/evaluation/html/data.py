"""The item browser's data: columnar, dictionary-coded, gzip + base64 for the page.

Layout (decoded in the page by ``DecompressionStream("gzip")``):

* ``ids``: source item ids (the browser's keys, ``#item=<id>``), ``subj``: a code per
  item into ``subjects``; ``configs``, ``runs``; ``strings``: every question, option,
  NA text and raw output once.
* ``text[config]``: per item ``q`` (string code or -1), ``ch`` (option codes or null),
  ``key`` (gold index or -1), ``na`` (the inserted NA / AotA text's code or -1): from the
  built dataset a run records (``dataset`` in its summary) when it is a local folder
  (:func:`~nabench.evaluation.results.item_texts`); absent otherwise.
* ``res[config][run]``: ``s``, one character per item: the parsed letter, upper case
  when right and lower case when wrong, ``?`` invalid, ``.`` not answered (``+``/``-``
  for answers that are no single letter); ``conf``: confidences (3 decimals, null when
  none); ``raw``: raw output codes.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from nabench.evaluation.results import Results

__all__ = ["StringTable", "browser_payload", "encode_payload"]


class StringTable:
    """Dictionary coding: each distinct string gets one code."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, value: object) -> int:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return -1
        s = str(value)
        if s not in self.codes:
            self.codes[s] = len(self.codes)
        return self.codes[s]

    def many(self, values: Iterable[object]) -> list[int]:
        return [self.code(v) for v in values]

    def column(self, values: pd.Series) -> np.ndarray:
        """Codes of a whole column: each distinct value coded once (null -> -1)."""
        local, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
        codes = np.array([*self.many(uniques), -1], dtype=np.int64)
        return codes[local]  # the sentinel -1 picks the trailing -1

    @property
    def strings(self) -> list[str]:
        return list(self.codes)


def _states(df: pd.DataFrame) -> np.ndarray:
    correct = df["correct"].to_numpy(bool)
    invalid = df["invalid"].to_numpy(bool)
    out = np.full(len(df), "+", dtype="<U1")
    out[~correct] = "-"
    if "parsed" in df:
        parsed = df["parsed"]
        if pd.api.types.is_string_dtype(parsed.dtype) and not pd.api.types.is_object_dtype(
            parsed.dtype
        ):
            letter = (parsed.str.len() == 1).fillna(False).to_numpy(bool)
        else:  # object columns may hold non-strings, which are never a letter
            letter = parsed.map(lambda p: isinstance(p, str) and len(p) == 1).to_numpy(bool)
        letters = parsed[letter].astype(str)
        out[letter & correct] = letters[correct[letter]].str.upper().to_numpy(str)
        out[letter & ~correct] = letters[~correct[letter]].str.lower().to_numpy(str)
    out[invalid] = "?"
    return out


def _run_entry(df: pd.DataFrame, pos: pd.Index, n: int, st: StringTable) -> dict:
    idx = pos.get_indexer(df["source_id"].astype(str))
    states = np.full(n, ".", dtype="<U1")
    states[idx] = _states(df)
    entry: dict[str, Any] = {"s": "".join(states.tolist())}
    conf = df["confidence"].to_numpy(np.float64) if "confidence" in df else np.full(len(df), np.nan)
    if np.isfinite(conf).any():
        full = np.full(n, np.nan)
        full[idx] = conf
        # Python's round (exact decimal halves), as the page has always shown them
        entry["conf"] = [None if math.isnan(c) else round(c, 3) for c in full.tolist()]
    if "raw_output" in df:
        raw = np.full(n, -1, dtype=np.int64)
        raw[idx] = st.column(df["raw_output"])
        entry["raw"] = raw.tolist()
    return entry


def _text_entry(rows: pd.DataFrame, pos: pd.Index, n: int, st: StringTable) -> dict:
    q, key, na = [-1] * n, [-1] * n, [-1] * n
    ch: list[list[int] | None] = [None] * n
    has_na = "na_text" in rows
    where = pos.get_indexer(rows["id"].astype(str)).tolist()
    for i, r in zip(where, rows.itertuples(index=False), strict=True):
        if i < 0:
            continue
        q[i] = st.code(r.question)
        ch[i] = st.many(r.choices) if "choices" in rows else None
        key[i] = int(r.answer) if "answer" in rows else -1
        na[i] = st.code(r.na_text) if has_na else -1
    return {"q": q, "ch": ch, "key": key, "na": na}


def browser_payload(results: Results, texts: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """The page's item data (layout in the module doc) from the report's results: every
    (run, config) of ``results.summaries``, nabench and harness runs alike; ``texts``:
    config -> the built dataset's rows (``id``, ``question``, ``choices``, ...)."""
    st = StringTable()
    responses = results.responses
    groups = dict(list(responses.groupby(["run", "config"], sort=False, observed=True)))
    summaries = results.summaries
    frames = [groups[key] for key in zip(summaries["run"], summaries["config"], strict=True)]
    # every run's source ids, in order of first appearance
    ids = pd.unique(pd.concat([f["source_id"].astype(str) for f in frames])).tolist()
    pos = pd.Index(ids)
    first = responses.drop_duplicates("source_id")
    subjects = dict(zip(first["source_id"].astype(str), first["subject"], strict=True))
    subj = StringTable()
    payload: dict[str, Any] = {
        "ids": ids,
        "subj": subj.many(subjects.get(i) for i in ids),
        "configs": sorted(dict.fromkeys(summaries["config"]), key=lambda c: c != "original"),
        "runs": list(dict.fromkeys(summaries["run"])),
        "res": {},
        "text": {},
    }
    for run, cfg, df in zip(summaries["run"], summaries["config"], frames, strict=True):
        payload["res"].setdefault(cfg, {})[run] = _run_entry(df, pos, len(ids), st)
    for cfg, rows in texts.items():
        payload["text"][cfg] = _text_entry(rows, pos, len(ids), st)
    payload["subjects"] = subj.strings
    payload["strings"] = st.strings
    return payload


def encode_payload(payload: Mapping[str, Any]) -> str:
    """gzip + base64 of the compact JSON (the page inflates it with DecompressionStream)."""
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
