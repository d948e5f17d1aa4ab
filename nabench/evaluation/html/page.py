"""``report.html``: one self-contained page (CSS, JS, data and plots inline; no network).

The tables are rendered here as HTML, so they show before any script runs; the item
browser's data (:mod:`.data`) is decoded by the page's script after that.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from nabench.core.atomic import atomic_file
from nabench.core.cells import fmt_cell
from nabench.evaluation.html.data import browser_payload, encode_payload
from nabench.evaluation.members import pooled_rows
from nabench.evaluation.report_data import Report
from nabench.evaluation.results import Results
from nabench.evaluation.tables import headline_columns, runs_table, shortcut_wins, with_ci

__all__ = ["HtmlTable", "html_table", "render_html", "write_html"]

HERE = Path(__file__).parent


@dataclass(frozen=True)
class HtmlTable:
    """Formatted cells; ``values`` keeps the exact number behind each cell (or None)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    values: tuple[tuple[str, ...], ...]


def _cell(col: str, v: object) -> tuple[str, str]:
    if isinstance(v, list | tuple):
        exact = json.dumps(list(v))
    else:
        exact = "" if isinstance(v, str) or v is None else repr(v)
    return fmt_cell(col, v), exact


def html_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> HtmlTable:
    cols = tuple(str(c) for c in (columns or df.columns) if c in df.columns)
    rows, values = [], []
    for rec in df.to_dict("records"):
        cells = [_cell(c, rec.get(c)) for c in cols]
        rows.append(tuple(c[0] for c in cells))
        values.append(tuple(c[1] for c in cells))
    return HtmlTable(cols, tuple(rows), tuple(values))


def _mean_drop(df: pd.DataFrame, by: str, results: Results) -> pd.DataFrame:
    models = pooled_rows(df, results) if not df.empty else df
    if models.empty:
        return pd.DataFrame()
    wide = models.pivot_table(index=by, columns="config", values="diff", aggfunc="mean")
    first = wide.columns[0]
    return wide.sort_values(first, ascending=False).reset_index()


def _plots(report: Report, out: Path) -> list[dict[str, str]]:
    def uri(path: Path) -> str:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")

    return [{"name": k, "src": uri(out / v)} for k, v in report.plots.items()]


def _discrimination(disc: pd.DataFrame) -> pd.DataFrame:
    if disc.empty:
        return disc
    return (
        disc.groupby("config", sort=False)["D"]
        .agg(n="size", mean="mean", median="median", min="min", max="max")
        .reset_index()
    )


def _context(report: Report, out: Path) -> dict[str, Any]:
    t = report.tables
    res = report.results
    payload = browser_payload(res, report.texts)
    payload["models"] = res.models  # the outcome filter's "any model": baselines aside
    redux = t.get("headline_redux")
    redux = pd.DataFrame() if redux is None else redux
    return {
        "headline": html_table(with_ci(t["headline"]), headline_columns()),
        "worst_case": html_table(with_ci(t["worst_case"]), headline_columns("variants")),
        "redux": html_table(with_ci(redux), headline_columns("config", "redux")),
        "shortcuts_run": not t["shortcuts"].empty,
        "shortcuts": html_table(shortcut_wins(t["shortcuts"])),
        "subject_drops": html_table(_mean_drop(t["headline_subjects"], "subject", res)),
        "category_drops": html_table(_mean_drop(t["headline_categories"], "category", res)),
        "categories": html_table(
            with_ci(t["headline_categories"]), headline_columns("config", "category")
        ),
        "panel": html_table(t["panel"]),
        "kr20_category": html_table(t["kr20_category"]),
        "discrimination": html_table(_discrimination(t["discrimination"])),
        "runs": html_table(runs_table(res)),
        "models": res.models,
        "baselines": res.baselines,
        "notes": report.notes,
        "plots": _plots(report, out),
        "data": encode_payload(payload),
        "n_items": len(payload["ids"]),
        "css": (HERE / "page.css").read_text("utf-8"),
        "js": (HERE / "page.js").read_text("utf-8"),
    }


@lru_cache(maxsize=1)
def _template() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("page.html.jinja")


def render_html(report: Report, out: Path) -> str:
    """The page as one string, from `report` alone (plots must already be under ``out``)."""
    return str(_template().render(**_context(report, out)))


def write_html(report: Report, out: str | Path) -> Path:
    """Write ``out/report.html`` atomically; returns its path."""
    out = Path(out)
    path = out / "report.html"
    with atomic_file(path) as tmp:
        tmp.write_text(render_html(report, out), encoding="utf-8")
    return path
