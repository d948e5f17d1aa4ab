"""Everything the card template shows, computed from the manifest and the staged tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from nabench.evaluation.shortcuts import score_shortcuts
from nabench.evaluation.strategies import ItemBatch
from nabench.schemas.item import PerturbedItem


@cache
def references() -> dict[str, dict[str, str]]:
    """The bibliography builders cite from, by key (`citations.yaml`)."""
    data = yaml.safe_load((Path(__file__).parent / "citations.yaml").read_text("utf-8"))
    return {key: {"key": key, **entry} for key, entry in (data or {}).items()}


def variant_citations(keys: Sequence[str]) -> list[dict[str, str]]:
    """The references named by `keys` (the builders' `cites`, in builder order), once each;
    a key the bibliography lacks is an error, not a reference silently left out."""
    table = references()
    unknown = sorted(set(keys) - set(table))
    if unknown:
        raise KeyError(f"no reference {unknown} in citations.yaml")
    return [table[key] for key in dict.fromkeys(keys)]


def field_rows(notes: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """(field, type, description) of a perturbed row, from the pydantic contract; `notes`
    (the source's `field_notes`) say what a field holds for this build's source."""

    rows = []
    for name, info in PerturbedItem.model_fields.items():
        annotation = info.annotation
        text = str(annotation).replace("typing.", "")
        type_name = getattr(annotation, "__name__", None) or text
        if "| None" in text:
            type_name = text.replace(" | None", "") + " (nullable)"
        desc = (notes or {}).get(name) or info.description or ""
        rows.append({"name": name, "type": type_name, "desc": desc})
    return rows


def na_rates(staged: Sequence[Any]) -> list[dict[str, Any]]:
    """NA-applicability per subject: labeled items, applicable ones, rate (labels config)."""
    import pandas as pd

    labels = [st.table for st in staged if st.config == "labels"]
    if not labels:
        return []
    subjects: dict[str, str | None] = {}
    for st in staged:
        if st.config in {"original", "excluded"}:
            for i, s in zip(
                st.table.column("id").to_pylist(),
                st.table.column("subject").to_pylist(),
                strict=True,
            ):
                subjects[i] = s
    frames = [t.select(["id", "na_applicable"]).to_pandas() for t in labels]
    frame = pd.concat(frames, ignore_index=True)
    frame["subject"] = frame["id"].map(lambda i: subjects.get(i) or "(none)")
    frame = frame[frame["na_applicable"].notna()]
    rows = []
    for subject, group in frame.groupby("subject", sort=True):
        n = len(group)
        k = int(group["na_applicable"].astype(bool).sum())
        rows.append({"subject": subject, "labeled": n, "applicable": k, "rate": k / n if n else 0})
    if rows:
        n = sum(r["labeled"] for r in rows)
        k = sum(r["applicable"] for r in rows)
        rows.append({"subject": "**all**", "labeled": n, "applicable": k, "rate": k / n})
    return rows


def letter_rows(letter_shares: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[Any]]:
    letters = sorted({letter for shares in letter_shares.values() for letter in shares})
    rows = [
        {"key": key, "shares": [f"{shares.get(letter, 0.0):.1%}" for letter in letters]}
        for key, shares in letter_shares.items()
    ]
    return letters, rows


NOT_SCREENED = (
    "NA-applicability screen: **none**. The items were not screened for NA-applicability: "
    "every eligible item is in every config, so some NA-keyed items keep an option that is "
    "still defensible once the gold one is gone. The NA study's NA-keyed numbers rest on such "
    "a screen (an LLM following a written guideline, checked against human labels); "
    "`--labels llm` or `--labels FILE` applies one."
)


_PROVENANCE_KEYS = frozenset(
    {"mode", "models", "model", "guideline_versions", "guideline_version", "path", "guideline"}
)


def labeler_lines(labels: Mapping[str, Any]) -> list[str]:
    """The card's plain statement of whether (and by which model and guideline) the items
    were screened for NA-applicability, then the labeler's provenance."""
    mode = labels.get("mode", "none")
    if mode == "none":
        return [NOT_SCREENED]
    models = labels.get("models") or ([labels["model"]] if labels.get("model") else [])
    versions = labels.get("guideline_versions") or (
        [labels["guideline_version"]] if labels.get("guideline_version") else []
    )
    by = ", ".join(f"`{m}`" for m in models) or "an unrecorded model"
    guideline = labels.get("guideline")
    rules = (f"guideline `{guideline}` " if guideline else "guideline ") + (
        "version " + ", ".join(f"`{v}`" for v in versions) if versions else "(version unrecorded)"
    )
    where = f" from the labels file `{labels['path']}`" if labels.get("path") else ""
    lines = [
        f"NA-applicability screen: **done** ({mode}{where}). Every config holds only the items "
        f"{by} judged NA-applicable following {rules}; the others are in `excluded` "
        "(`not_na_applicable`, `missing_label`, `invalid_label`).",
        f"Labeler model(s): {by}.",
        "Guideline version(s): " + (", ".join(f"`{v}`" for v in versions) or "unknown") + ".",
    ]
    extra = {k: v for k, v in labels.items() if k not in _PROVENANCE_KEYS}
    if extra:
        lines.append("Labeler settings: " + ", ".join(f"{k}={v}" for k, v in sorted(extra.items())))
    return lines


def shortcut_rows(staged: Sequence[Any], skip: frozenset[str]) -> list[dict[str, str]]:
    """Config/split × key-blind strategy where the strategy wins (its 95 % CI above the
    majority baseline; ``nabench.evaluation.shortcuts``), for the card."""
    rows = []
    for st in staged:
        t = st.table
        if st.config in skip or t.num_rows == 0 or "choices" not in t.column_names:
            continue
        batch = ItemBatch.from_lists(
            t.column("id").to_pylist(),
            t.column("choices").to_pylist(),
            t.column("answer").to_pylist(),
        )
        for s in score_shortcuts(batch):
            if s.beats_majority:
                rows.append({"key": f"{st.config}/{st.split}", "strategy": s.strategy,
                             "accuracy": f"{s.accuracy:.1%}", "ci_low": f"{s.ci_low:.1%}",
                             "majority": f"{s.majority_baseline:.1%}"})  # fmt: skip
    return rows
