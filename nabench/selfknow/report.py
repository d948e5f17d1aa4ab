"""Render :class:`SelfKnowledgeMetrics` as JSON-ready dicts, text tables, Markdown and charts.

Every renderer takes the metrics for the chosen matching mode (``primary``) and optionally the
other mode (``alternative``), shown side by side and labelled, so that reason-level (the paper's
definition) and type-level (same type, different reason counts as a match) are never confused.
Undefined scores (zero denominator) are ``null`` in JSON and "—" in tables and charts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nabench.core.atomic import atomic_file
from nabench.core.cells import fmt_value
from nabench.core.out_guard import OutKind, holds_record
from nabench.selfknow.metrics import SelfKnowledgeMetrics, TypeMetrics
from nabench.selfknow.scores import SelfKnowledgeCounts, SelfKnowledgeScores

MATCH_DESCRIPTIONS = {
    "reason": "both verdicts infeasible for the same reason (the paper's definition)",
    "type": "both verdicts infeasible for the same self-knowledge type, reasons may differ",
}

SCORE_LABELS: tuple[tuple[str, str], ...] = (
    ("accuracy", "A"),
    ("foresight", "F"),
    ("insight", "I"),
    ("overconfidence", "Over"),
    ("conservatism", "Cons"),
    ("confidence_balance", "CB"),
    ("harmonic_fi", "HM(F,I)"),
)
COUNT_LABELS: tuple[str, ...] = ("N_ff", "N_fr", "N_rf", "N_rr", "N_rr'")
UNDEFINED = "—"


def fmt_score(value: float | None) -> str:
    """A score or rate as every selfknow table and card shows it (the one cell formatter)."""
    return fmt_value(value, missing=UNDEFINED)


TOP_MISMATCHES = 10


def _overall(counts: SelfKnowledgeCounts, scores: SelfKnowledgeScores) -> dict[str, Any]:
    return {"n": counts.n, **scores.as_dict(), "counts": counts.as_dict()}


def _type_entry(metrics: TypeMetrics) -> dict[str, Any]:
    return {
        "name": metrics.name,
        "known": metrics.known,
        **_overall(metrics.counts, metrics.scores),
    }


def metrics_to_dict(
    primary: SelfKnowledgeMetrics, alternative: SelfKnowledgeMetrics | None = None
) -> dict[str, Any]:
    """A JSON-serialisable view: ``primary``'s overall scores at top level, plus ``by_type``,
    ``confusion``, ``top_mismatches``, ``quality`` and ``variants`` (overall per matching mode).
    """
    variants = {primary.match: primary}
    if alternative is not None:
        variants[alternative.match] = alternative
    return {
        "match": primary.match,
        "match_description": MATCH_DESCRIPTIONS[primary.match],
        "taxonomy_version": primary.taxonomy_version,
        **_overall(primary.counts, primary.scores),
        "by_type": {key: _type_entry(value) for key, value in primary.by_type.items()},
        "variants": {
            mode: {
                "description": MATCH_DESCRIPTIONS[mode],
                **_overall(metrics.counts, metrics.scores),
            }
            for mode, metrics in sorted(variants.items())
        },
        "confusion": {
            "rows": "generated",
            "columns": "classified",
            "labels": list(primary.confusion.labels),
            "counts": [list(row) for row in primary.confusion.counts],
        },
        "top_mismatches": [
            {"generated": pair.generated, "classified": pair.classified, "count": pair.count}
            for pair in primary.mismatches
        ],
        "quality": primary.quality.as_dict(),
    }


def _grid(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    body = [list(row) for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *body, strict=True)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in body]
    return [line.rstrip() for line in lines]


def _markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def _variants(
    primary: SelfKnowledgeMetrics, alternative: SelfKnowledgeMetrics | None
) -> list[SelfKnowledgeMetrics]:
    found = [primary] + ([alternative] if alternative is not None else [])
    return sorted(found, key=lambda metrics: metrics.match)


def _overall_rows(
    variants: Sequence[SelfKnowledgeMetrics],
) -> tuple[list[str], list[list[str]]]:
    header = ["metric", *(f"{metrics.match}-level" for metrics in variants)]
    rows = [["n", *(str(metrics.n) for metrics in variants)]]
    for key, label in SCORE_LABELS:
        rows.append([label, *(fmt_score(getattr(metrics.scores, key)) for metrics in variants)])
    for label in COUNT_LABELS:
        rows.append([label, *(str(metrics.counts.as_dict()[label]) for metrics in variants)])
    return header, rows


def _type_rows(primary: SelfKnowledgeMetrics) -> tuple[list[str], list[list[str]]]:
    header = ["type", "n", *(label for _, label in SCORE_LABELS), *COUNT_LABELS]
    rows = []
    for metrics in primary.by_type.values():
        counts = metrics.counts.as_dict()
        rows.append(
            [
                metrics.name + ("" if metrics.known else " (unknown)"),
                str(metrics.counts.n),
                *(fmt_score(getattr(metrics.scores, key)) for key, _ in SCORE_LABELS),
                *(str(counts[label]) for label in COUNT_LABELS),
            ]
        )
    return header, rows


def _quality_lines(primary: SelfKnowledgeMetrics) -> list[str]:
    q = primary.quality
    notes = [f"rows in table: {q.total_rows}; scored: {primary.n}; invalid class: {q.invalid_rows}"]
    for row, gen, cls in q.invalid_examples:
        notes.append(f"  invalid row {row}: generated_class={gen!r}, classified_class={cls!r}")
    for label, count in (
        (
            "generated feasible but carrying a reason (reason ignored)",
            q.generated_feasible_with_reason,
        ),
        (
            "classified feasible but carrying a reason (reason ignored)",
            q.classified_feasible_with_reason,
        ),
        ("generated infeasible without a reason", q.generated_infeasible_without_reason),
        ("classified infeasible without a reason", q.classified_infeasible_without_reason),
    ):
        if count:
            notes.append(f"{label}: {count}")
    for side, unknown in (
        ("generated", q.unknown_generated_reasons),
        ("classified", q.unknown_classified_reasons),
    ):
        if unknown:
            listed = ", ".join(f"{name!r} ×{count}" for name, count in unknown.items())
            notes.append(f"reasons not in the taxonomy ({side}): {listed}")
    return notes


def format_metrics_text(
    primary: SelfKnowledgeMetrics,
    alternative: SelfKnowledgeMetrics | None = None,
    title: str | None = None,
) -> str:
    """A plain-text report for a terminal."""
    lines = [title] if title else []
    lines.append(f"Self-knowledge metrics (taxonomy {primary.taxonomy_version})")
    for metrics in _variants(primary, alternative):
        lines.append(f"  {metrics.match}-level: {MATCH_DESCRIPTIONS[metrics.match]}")
    lines.append(f"  {UNDEFINED}: undefined (zero denominator)")
    lines.append("")
    lines += _grid(*_overall_rows(_variants(primary, alternative)))
    lines += ["", f"By generated type ({primary.match}-level):"]
    lines += _grid(*_type_rows(primary))
    if primary.mismatches:
        lines += ["", f"Most frequent mismatched reasons ({primary.match}-level N_rr'):"]
        lines += _grid(
            ["generated", "classified", "count"],
            (
                [pair.generated, pair.classified, str(pair.count)]
                for pair in primary.mismatches[:TOP_MISMATCHES]
            ),
        )
    lines += ["", "Data quality:"] + [f"  {note}" for note in _quality_lines(primary)]
    return "\n".join(lines) + "\n"


def render_markdown(
    primary: SelfKnowledgeMetrics,
    alternative: SelfKnowledgeMetrics | None = None,
    title: str = "Self-knowledge metrics",
    charts: Sequence[str] = (),
) -> str:
    """A Markdown report; ``charts`` are image paths (relative to the report) to embed."""
    lines = [f"# {title}", "", f"Taxonomy version {primary.taxonomy_version}.", ""]
    for metrics in _variants(primary, alternative):
        lines.append(f"- **{metrics.match}-level**: {MATCH_DESCRIPTIONS[metrics.match]}")
    lines += [f"- {UNDEFINED}: undefined (zero denominator)", "", "## Overall", ""]
    lines += _markdown_table(*_overall_rows(_variants(primary, alternative)))
    lines += ["", f"## By generated type ({primary.match}-level)", ""]
    lines += _markdown_table(*_type_rows(primary))
    if primary.mismatches:
        lines += ["", f"## Most frequent mismatched reasons ({primary.match}-level N_rr')", ""]
        lines += _markdown_table(
            ["generated", "classified", "count"],
            (
                [pair.generated, pair.classified, str(pair.count)]
                for pair in primary.mismatches[:TOP_MISMATCHES]
            ),
        )
    confusion = primary.confusion
    lines += ["", "## Confusion matrix (rows: generated, columns: classified)", ""]
    lines += _markdown_table(
        ["generated \\ classified", *confusion.labels],
        (
            [label, *(str(count) for count in row)]
            for label, row in zip(confusion.labels, confusion.counts, strict=True)
        ),
    )
    lines += ["", "## Data quality", ""] + [f"- {note.strip()}" for note in _quality_lines(primary)]
    if charts:
        lines += ["", "## Charts", ""] + [f"![{Path(chart).stem}]({chart})" for chart in charts]
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "type"


def _bar_chart(path: Path, title: str, scores: SelfKnowledgeScores) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for _, label in SCORE_LABELS]
    values = [getattr(scores, key) for key, _ in SCORE_LABELS]
    figure, axes = plt.subplots(figsize=(7, 3.5))
    try:
        heights = [0.0 if value is None else value for value in values]
        bars = axes.bar(labels, heights, color="#4c72b0")
        for bar, value in zip(bars, values, strict=True):
            axes.annotate(
                fmt_score(value),
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom" if bar.get_height() >= 0 else "top",
                fontsize=8,
            )
        axes.axhline(0, color="black", linewidth=0.8)
        axes.set_ylim(-1.05, 1.15)
        axes.set_title(title, fontsize=10)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)


# What `write_report` writes: in a folder holding an earlier report, rewriting these loses
# nothing of the user's; elsewhere (no nabench metrics.json) a report.md is the user's.
REPORT_OUT = OutKind(
    "a self-knowledge report (report.md, metrics.json, type_*.png)",
    lambda rel, _path: (
        rel in ("report.md", "metrics.json") or (rel.startswith("type_") and rel.endswith(".png"))
    ),
    # metrics.json is written first: its keys (`metrics_to_dict`) mark the folder as ours
    wrote=holds_record(
        "metrics.json", ("match", "match_description", "taxonomy_version", "by_type", "variants")
    ),
)


def write_report(
    out_dir: str | Path,
    primary: SelfKnowledgeMetrics,
    alternative: SelfKnowledgeMetrics | None = None,
    title: str = "Self-knowledge metrics",
) -> list[Path]:
    """Write ``report.md``, ``metrics.json`` and one bar chart PNG per type into ``out_dir``.

    Returns the written paths. Undefined scores are drawn as empty bars labelled "—".
    """
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # metrics.json first: it marks the folder as a report's (REPORT_OUT), even if killed later.
    data = out / "metrics.json"
    with atomic_file(data) as tmp:
        tmp.write_text(
            json.dumps(metrics_to_dict(primary, alternative), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    charts: list[str] = []
    written: list[Path] = []
    for key, metrics in primary.by_type.items():
        name = f"type_{_slug(key)}.png"
        suffix = 1
        while name in charts:  # two keys with the same slug
            suffix += 1
            name = f"type_{_slug(key)}_{suffix}.png"
        chart_title = f"{metrics.name} ({primary.match}-level, n={metrics.counts.n})"
        _bar_chart(out / name, chart_title, metrics.scores)
        charts.append(name)
        written.append(out / name)
    report = out / "report.md"
    with atomic_file(report) as tmp:
        tmp.write_text(render_markdown(primary, alternative, title, charts), encoding="utf-8")
    return [report, data, *written]
