"""`Report`: everything `nabench report` computed, in one object every output is drawn from.

``report.md``, ``report.json``, the plots and ``report.html`` (its tables and its item
browser) all read this object, never the result files again, so every run that is in
one output is in all of them, harness runs (lm-eval, inspect) included. It is its own
module so that the writers import it at run time without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from nabench.evaluation.panel import Panel
from nabench.evaluation.results import Results
from nabench.schemas.protocol import Protocol

__all__ = ["Report"]


@dataclass
class Report:
    """Every table of the report (DataFrames), the panels, the results they come from
    (with each row's raw output and the items' text, for the item browser) and the
    written paths."""

    results: Results
    tables: dict[str, pd.DataFrame]
    panels: list[Panel]
    min_coverage: float
    plots: dict[str, Path] = field(default_factory=dict)
    markdown: str = ""
    protocol: Protocol | None = None
    paper: list[str] = field(default_factory=list)  # names of the preset's paper tables
    # config -> the built dataset's item text (results.item_texts), for the item browser
    texts: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # runs / rows the tables leave out, and why
