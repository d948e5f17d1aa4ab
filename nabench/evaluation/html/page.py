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
from typing import TYPE_CHECKING, Any

import pandas as pd

from nabench.core.atomic import atomic_file
from nabench.core.safe_load import load_json_file
from nabench.evaluation.html.data import browser_payload, encode_payload
from nabench.evaluation.render import fmt_p, fmt_value
from nabench.evaluation.results import run_folders

if TYPE_CHECKING:
    from nabench.evaluation.report import Report

__all__ = ["HtmlTable", "html_table", "render_html", "write_html"]

HERE = Path(__file__).parent
HEADLINE_COLS = (
    "run",
    "model",
    "config",
    "n",
    "acc_original",
    "acc_variant",
    "diff",
    "diff_ci",
    "rel_drop",
    "rel_drop_ci",
    "mcnemar_p",
)
_SETTINGS = ("model", "backend", "mode", "prompt_version", "dataset", "revision", "split")


@dataclass(frozen=True)
class HtmlTable:
    """Formatted cells; ``values`` keeps the exact number behind each cell (or None)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    values: tuple[tuple[str, ...], ...]


def _cell(col: str, v: object) -> tuple[str, str]:
    if isinstance(v, list | tuple):
        return f"[{fmt_value(v[0])}, {fmt_value(v[1])}]", json.dumps(list(v))
    exact = "" if isinstance(v, str) or v is None else repr(v)
    is_p = col.endswith("_p") or col.startswith("p_value")
    return (fmt_p(v) if is_p else fmt_value(v)), exact


def html_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> HtmlTable:
    cols = tuple(str(c) for c in (columns or df.columns) if c in df.columns)
    rows, values = [], []
    for rec in df.to_dict("records"):
        cells = [_cell(c, rec.get(c)) for c in cols]
        rows.append(tuple(c[0] for c in cells))
        values.append(tuple(c[1] for c in cells))
    return HtmlTable(cols, tuple(rows), tuple(values))


def _with_ci(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    lo_hi = {"diff_ci": ("diff_low", "diff_high"), "rel_drop_ci": ("rel_drop_low", "rel_drop_high")}
    out = df.copy()
    for name, (lo, hi) in lo_hi.items():
        out[name] = [[a, b] for a, b in zip(df[lo], df[hi], strict=True)]
    return out


def _mean_drop(df: pd.DataFrame, by: str) -> pd.DataFrame:
    models = df[df["role"] == "model"] if not df.empty else df
    if models.empty:
        return pd.DataFrame()
    wide = models.pivot_table(index=by, columns="config", values="diff", aggfunc="mean")
    first = wide.columns[0]
    return wide.sort_values(first, ascending=False).reset_index()


def _summary_settings(folders: dict[str, Path]) -> pd.DataFrame:
    rows = []
    for run, folder in folders.items():
        for f in sorted(folder.glob("*.summary.json")):
            s = load_json_file(f)  # bounded; a bad summary is one line naming it
            rows.append({"run": run, "config": s.get("config"), **{k: s.get(k) for k in _SETTINGS}})
    return pd.DataFrame(rows, columns=["run", "config", *_SETTINGS])


def _runs_table(settings: pd.DataFrame) -> pd.DataFrame:
    agg = {k: (k, "first") for k in _SETTINGS}
    return (
        settings.groupby("run", sort=False)
        .agg(**agg, configs=("config", lambda c: ", ".join(map(str, c))))
        .reset_index()
    )


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


def _context(report: Report, folders: dict[str, Path], out: Path) -> dict[str, Any]:
    t = report.tables
    res = report.results
    settings = _summary_settings(folders)
    subjects = res.responses.drop_duplicates("source_id")
    subj = dict(zip(subjects["source_id"].astype(str), subjects["subject"], strict=True))
    payload = browser_payload(settings, folders, subj)
    payload["models"] = res.models  # the outcome filter's "any model": baselines aside
    return {
        "headline": html_table(_with_ci(t["headline"]), HEADLINE_COLS),
        "worst_case": html_table(_with_ci(t["worst_case"]), HEADLINE_COLS),
        "subject_drops": html_table(_mean_drop(t["headline_subjects"], "subject")),
        "category_drops": html_table(_mean_drop(t["headline_categories"], "category")),
        "categories": html_table(_with_ci(t["headline_categories"]), (*HEADLINE_COLS, "category")),
        "panel": html_table(t["panel"]),
        "kr20_category": html_table(t["kr20_category"]),
        "discrimination": html_table(_discrimination(t["discrimination"])),
        "runs": html_table(_runs_table(settings)),
        "models": res.models,
        "baselines": res.baselines,
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


def render_html(report: Report, paths: Sequence[str | Path], out: Path) -> str:
    """The page as one string (plots must already be written under ``out``)."""
    return str(_template().render(**_context(report, run_folders(paths), out)))


def write_html(report: Report, paths: Sequence[str | Path], out: str | Path) -> Path:
    """Write ``out/report.html`` atomically; returns its path."""
    out = Path(out)
    path = out / "report.html"
    with atomic_file(path) as tmp:
        tmp.write_text(render_html(report, paths, out), encoding="utf-8")
    return path
