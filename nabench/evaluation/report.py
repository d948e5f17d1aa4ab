"""`nabench report`: the headline drops with CIs, accuracy tables, panel reliability, plots.

Pieces: :mod:`~nabench.evaluation.results` (loading, roles), :mod:`~.headline` (paired
drops, McNemar, worst case), :mod:`~.tables` (per-config tables), :mod:`~.panel`
(KR-20, D, ANOVA, correlations over models only), :mod:`~.render` (``report.md`` from a
Jinja template), :mod:`~.plots`. This module builds them and writes the files.

``report.json`` (``REPORT_JSON_VERSION``; keys stay stable, new keys may be added):

* ``version``, ``models`` (run names of models, one run per model), ``baselines``
  (reference strategies), ``min_models``, ``panel_status`` (``ok`` or ``needs ≥ 5
  models``), ``notes`` (one line per run or row set the tables leave out, and why);
* ``headline``: one object per run × variant config: ``run``, ``model`` (model id),
  ``role`` (``model``/``baseline``), ``config``, ``n`` (paired rows), ``n_clusters``
  (source items), ``acc_original``, ``acc_variant`` (accuracy: share correct, an invalid
  answer wrong), ``invalid_share_original``, ``invalid_share_variant``, ``diff``,
  ``diff_ci`` [lo, hi],
  ``rel_drop``, ``rel_drop_ci`` [lo, hi], ``mcnemar_p``, ``mcnemar_method``
  (``exact``/``chi2``), counts ``orig_only_correct`` (b), ``variant_only_correct`` (c),
  ``both_correct``, ``both_wrong``, ``invalid_original``, ``invalid_variant``;
* ``headline_subjects`` / ``headline_categories``: the same plus ``subject`` /
  ``category``; ``worst_case``: the same with ``config: "worst_case"`` and ``variants``;
* ``shortcuts``: per config and reference run of a strategy that never reads the key
  (``always-a``, ``longest``, ``always-na``, ``never-na``, ``always-aota``): accuracy,
  CI, ``majority_baseline``, ``margin`` (ci_low − baseline) and ``beats_majority``;
* ``headline*`` rows also carry ``family``, ``mcnemar_p_holm``, ``mcnemar_p_bh``,
  ``significant_fdr`` (BH-adjusted p < 0.05 within the family), ``mde_80``, and the
  clustered drop test ``clustering``, ``n_clustering_units``, ``cl_diff_low``,
  ``cl_diff_high``, ``cl_p``;
* ``configs``: accuracy per run × config (with ``role``), ``invalid_rate``, ``invalid_credit``
  and ``score`` (mean item score with that credit; never called accuracy); ``panel``,
  ``kr20_category``, ``correlations``: the panel tables (numbers null, ``note`` saying why,
  below 5 models);
* with ``--protocol``: ``protocol`` (the preset) and ``paper_tables`` (name → rows; see
  :mod:`~nabench.evaluation.paper_report`);
* with ``--redux``: ``headline_redux``, the headline per run × config × ``redux`` (``ok`` /
  ``flagged``: the build's MMLU-Redux verdict on the item; see ``headline.headline_redux``).

Missing numbers are ``null``. Every table is also written as ``tables/<name>.csv``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nabench.core.atomic import atomic_file
from nabench.core.out_guard import OutKind, check_folder, holds_record
from nabench.core.safe_load import ParseLimits
from nabench.evaluation.headline import headline_redux, headline_table
from nabench.evaluation.html import write_html
from nabench.evaluation.members import (
    pairing_notes,
    panel_notes,
    report_members,
    unchecked_notes,
)
from nabench.evaluation.panel import (
    MIN_MODELS,
    NEEDS_MODELS,
    anova_table,
    correlation_table,
    discrimination_table,
    kr20_category_table,
    kr20_subject_table,
    make_panel,
    panel_table,
    panels_ready,
)
from nabench.evaluation.paper_report import condition_notes, paper_anova, paper_tables
from nabench.evaluation.plots import write_plots
from nabench.evaluation.render import render_markdown
from nabench.evaluation.report_data import Report
from nabench.evaluation.results import ORIGINAL, Results, item_texts, load_results
from nabench.evaluation.tables import (
    CI_PAIRS,
    confidence_table,
    config_table,
    phrasing_table,
    shortcut_table,
    subject_table,
    with_ci,
)
from nabench.schemas.protocol import Protocol
from nabench.stats.inference import json_safe

__all__ = ["REPORT_JSON_VERSION", "Report", "build_report", "report_json", "write_report"]

REPORT_JSON_VERSION = 1


def build_report(
    results: Results,
    min_coverage: float = 1.0,
    protocol: Protocol | None = None,
    labels: pd.DataFrame | None = None,
    redux: Mapping[str, str] | None = None,
) -> Report:
    """Compute every table (no files written); a protocol preset adds its paper's tables
    (``labels``: NA-applicability labels, id → na_applicable, for the NA-filtered table;
    ``redux``: id → MMLU-Redux error_type, for ``headline_redux``). One run per model
    (:mod:`~nabench.evaluation.members`); ``notes`` say what was left out."""
    results, notes = report_members(results)
    configs = config_table(results)
    variants = results.mc_variants()
    panels = [p for c in results.configs if (p := make_panel(results, c, min_coverage))]
    notes += pairing_notes(results, variants) + panel_notes(results, panels)
    notes += unchecked_notes(results)
    kr_subj = kr20_subject_table(panels)
    tables = {
        "configs": configs,
        "shortcuts": shortcut_table(configs, results),
        **headline_table(results, variants),
        "subjects": subject_table(results),
        "panel": panel_table(panels),
        "discrimination": discrimination_table(panels),
        "kr20_category": kr20_category_table(panels),
        "kr20_subject": kr_subj,
        "anova": anova_table(kr_subj, [ORIGINAL, *variants]),
        "correlations": correlation_table(configs, variants, results.models, panels),
        "phrasing": phrasing_table(configs[configs["role"] == "model"]),
        "confidence": confidence_table(results),
    }
    if redux is not None:
        tables["headline_redux"] = headline_redux(results, variants, redux)
    compared = [ORIGINAL, *variants]
    paper = (
        {}
        if protocol is None
        else paper_tables(tables, panels, compared, results, protocol, labels)
    )
    tables.update(paper)
    if (name := paper_anova(protocol)) is not None:
        tables["anova"] = paper[name]  # the paper's conditions and grouping, not every config
    notes += condition_notes(protocol, [c for c in compared if c in set(results.configs)])
    return Report(
        results, tables, panels, min_coverage, protocol=protocol, paper=list(paper), notes=notes
    )


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON objects, each CI as one ``[lo, hi]`` pair in place of its two columns."""
    pairs = [c for lo_hi in CI_PAIRS.values() for c in lo_hi if c in df]
    return with_ci(df).drop(columns=pairs).to_dict("records")  # type: ignore[return-value]


def report_json(report: Report) -> dict[str, Any]:
    """The machine-readable report (structure in the module docstring)."""
    t = report.tables
    res = report.results
    keys = (
        "configs",
        "shortcuts",
        "headline",
        "headline_subjects",
        "headline_categories",
        "worst_case",
        "panel",
        "kr20_category",
        "correlations",
    )
    return json_safe(
        {
            "version": REPORT_JSON_VERSION,
            "models": res.models,
            "baselines": res.baselines,
            "min_models": MIN_MODELS,
            "panel_status": "ok" if panels_ready(report.panels) else NEEDS_MODELS,
            "notes": report.notes,
            **{k: _records(t[k]) for k in keys},
            **({"headline_redux": _records(t["headline_redux"])} if "headline_redux" in t else {}),
            **(
                {}
                if report.protocol is None
                else {
                    "protocol": report.protocol.record(),
                    "paper_tables": {k: _records(t[k]) for k in report.paper},
                }
            ),
        }
    )


# report.json is written first and is what marks a folder as a report's (any version of its
# layout: earlier ones were indented); a report killed half-way is still recognised.
_HOLDS_A_REPORT = holds_record(
    "report.json",
    ("version", "models", "baselines", "headline", "configs"),
    ParseLimits(max_bytes=256 * 2**20, max_nodes=50_000_000),  # a large panel's report
)


# What `write_report` writes: in a folder holding an earlier report, rewriting these loses
# nothing of the user's; elsewhere (no nabench report.json) a report.md is the user's.
_REPORT_FILES = frozenset({"report.md", "report.json", "report.html"})
REPORT_OUT = OutKind(
    "a nabench report (report.md, report.json, report.html, tables/, plots/)",
    lambda rel, _path: (
        rel in _REPORT_FILES
        or (rel.startswith("tables/") and rel.count("/") == 1 and rel.endswith(".csv"))
        or (rel.startswith("plots/") and rel.count("/") == 1 and rel.endswith(".png"))
    ),
    wrote=_HOLDS_A_REPORT,
)


def write_report(
    paths: Sequence[str | Path],
    out: str | Path,
    min_coverage: float = 1.0,
    plots: bool = True,
    html: bool = True,
    protocol: Protocol | None = None,
    labels: pd.DataFrame | None = None,
    redux: Mapping[str, str] | None = None,
) -> Report:
    """Load results, compute the tables, write CSVs, plots, ``report.md``, ``report.json``
    and (``html``) the self-contained ``report.html`` (:mod:`~nabench.evaluation.html`)."""
    out = Path(out)
    check_folder(out, REPORT_OUT, [("the results folder", Path(p)) for p in paths])
    report = build_report(load_results(paths), min_coverage, protocol, labels, redux)
    # report.json first: it marks the folder as a report's (REPORT_OUT), even if killed later.
    # Compact JSON: the C encoder (indent= would fall back to the slow Python one).
    with atomic_file(out / "report.json") as tmp:
        tmp.write_text(json.dumps(report_json(report), ensure_ascii=False), encoding="utf-8")
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    for name, df in report.tables.items():
        with atomic_file(tables_dir / f"{name}.csv") as tmp:
            df.to_csv(tmp, index=False)
    if plots:
        report.plots = {
            k: v.relative_to(out) for k, v in write_plots(report, out / "plots").items()
        }
    report.markdown = render_markdown(report)
    with atomic_file(out / "report.md") as tmp:
        tmp.write_text(report.markdown, encoding="utf-8")
    if html:
        report.texts = item_texts(report.results.summaries)
        write_html(report, out)
    return report
