"""Who the report is about: one run per model, models before baselines, baselines on the
models' items, and a line for every run a table would otherwise drop without a word.

A panel member is a model — backend, model id and weights revision — not a run: two runs of
one model with other settings (``--limit``, prompt format, mode, protocol) are one model, and
counting both would compute KR-20, D and the correlations over copies of it. Of such runs the
report keeps the one covering the most items (answers over all its configs, not counting a
config whose every answer is invalid: the run measured nothing there) and says which it
kept; when two hold equally many there is no principled choice, so the report is refused
in one line naming them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nabench.core.errors import NabenchError
from nabench.evaluation.panel import Panel, unmeasured, unmeasured_pairs
from nabench.evaluation.results import ORIGINAL, Results

__all__ = [
    "Duplicate",
    "one_run_per_model",
    "pairing_notes",
    "panel_notes",
    "pooled_rows",
    "report_members",
    "unchecked_notes",
]


@dataclass(frozen=True)
class Duplicate:
    """Runs of one model: the one the report uses and the ones it leaves out."""

    model: str  # "backend model@revision"
    used: tuple[str, int, int]  # (run, answers, answers in configs with a valid one)
    left_out: tuple[tuple[str, int, int], ...]

    def note(self) -> str:
        def say(run: str, n: int, valid: int) -> str:
            why = f", {n - valid} of them in configs with none valid" if valid < n else ""
            return f"{run} ({n} answers{', none valid' if valid == 0 else why})"

        others = ", ".join(say(*r) for r in self.left_out)
        return f"model {self.model}: used run {say(*self.used)}; left out its other run(s) {others}"


def _label(identity: tuple[str, str, str]) -> str:
    backend, model, revision = identity
    return f"{backend} {model}" + (f"@{revision}" if revision else "")


def one_run_per_model(results: Results) -> tuple[Results, list[Duplicate]]:
    """``results`` with one run per model (the one covering the most items); baselines kept."""
    r = results.responses
    per = r.groupby(["run", "config"], sort=False, observed=True).size()
    sizes = per.groupby(level="run", sort=False, observed=True).sum()
    gone = unmeasured_pairs(r)
    valid = per[[(str(a), str(c)) not in gone for a, c in per.index]]
    valid = valid.groupby(level="run", sort=False, observed=True).sum()

    def rank(run: str) -> tuple[str, int, int]:
        return run, int(sizes.get(run, 0)), int(valid.get(run, 0))

    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for run, identity in results.model_identity().items():
        groups[identity].append(run)
    dropped: set[str] = set()
    duplicates = []
    for identity, runs in groups.items():
        if len(runs) < 2:
            continue
        ranked = sorted(map(rank, runs), key=lambda x: (-x[2], -x[1]))  # measured first
        tied = [x[0] for x in ranked if x[1:] == ranked[0][1:]]
        if len(tied) > 1:
            raise NabenchError(
                f"runs {', '.join(tied)} are all of model {_label(identity)} and hold "
                f"{ranked[0][1]} answers each: give only one of them to the report"
            )
        duplicates.append(Duplicate(_label(identity), ranked[0], tuple(ranked[1:])))
        dropped.update(x[0] for x in ranked[1:])
    if not dropped:
        return results, []
    return results.subset([r for r in results.runs if r not in dropped]), duplicates


def _models_first(results: Results) -> Results:
    """Rows of model runs before rows of baselines, so every table lists models first."""
    models = set(results.models)
    s, r = results.summaries, results.responses
    s_order = np.argsort(~s["run"].isin(models).to_numpy(), kind="stable")
    r_order = np.argsort(~r["run"].isin(models).to_numpy(), kind="stable")
    return Results(s.iloc[s_order].reset_index(drop=True), r.iloc[r_order].reset_index(drop=True))


def _baselines_on_model_items(results: Results) -> Results:
    """Baseline rows only on the (config, item) pairs some model answered: a baseline over
    all 14,042 items beside a model run on 5 compares two different tests."""
    models = set(results.models)
    r = results.responses
    is_model = r["run"].isin(models).to_numpy()
    if not is_model.any() or is_model.all():
        return results
    keys = pd.MultiIndex.from_arrays([r["config"].astype(str), r["id"].astype(str)])
    answered = keys[is_model].unique()
    keep = is_model | keys.isin(answered)
    r = r[keep].reset_index(drop=True)
    present = set(zip(r["run"].astype(str), r["config"].astype(str), strict=True))
    s = results.summaries
    s_keep = [(str(a), str(b)) in present for a, b in zip(s["run"], s["config"], strict=True)]
    return Results(s[s_keep].reset_index(drop=True), r)


def pairing_notes(results: Results, variants: list[str]) -> list[str]:
    """One line per run × variant whose rows (some or all) have no ``original`` row of their
    source item, the run's ``original`` missing altogether included: the headline pairs by
    source item and would drop them unsaid."""
    r = results.responses
    base = r.loc[r["config"] == ORIGINAL, ["run", "source_id"]].astype(str).drop_duplicates()
    have = pd.MultiIndex.from_frame(base)
    notes = []
    runs_with_original = set(base["run"])
    for (run, config), g in r[r["config"].isin(variants)].groupby(
        ["run", "config"], sort=False, observed=True
    ):
        if str(run) not in runs_with_original:
            notes.append(
                f"run {run}: no {ORIGINAL} results, so its {len(g)} {config} row(s) pair "
                "with nothing: left out of the headline"
            )
            continue
        keys = pd.MultiIndex.from_arrays([g["run"].astype(str), g["source_id"].astype(str)])
        missing = int((~keys.isin(have)).sum())
        if missing:
            notes.append(
                f"run {run}: {missing} of {len(g)} {config} row(s) have no original row of "
                "their source item (ids differ between the configs?): left out of the "
                "headline"
            )
    return notes


def report_members(results: Results) -> tuple[Results, list[str]]:
    """The results a report is computed from, and the notes saying what was left out."""
    results, duplicates = one_run_per_model(results)
    results = _baselines_on_model_items(_models_first(results))
    return results, [d.note() for d in duplicates]


def panel_notes(results: Results, panels: list[Panel]) -> list[str]:
    """One line per config whose panel lost items (or all of them) because the model runs'
    ids differ: a panel is over the items every member answered; and one per config with
    model runs whose every answer is invalid (left out of its panel)."""
    r = results.responses
    r = r[r["run"].isin(results.models)]
    sizes = r.groupby(["config", "run"], sort=False, observed=True).size()
    by_config = {p.config: p for p in panels}
    notes = []
    for config, rows in r.groupby("config", sort=False, observed=True):
        config = str(config)
        if runs := unmeasured(rows):
            notes.append(
                f"config {config}: run(s) {', '.join(runs)} gave every answer invalid (none "
                "parsed): left out of its panel (KR-20, D, correlations) and of the means over "
                "models, kept in the per-run tables"
            )
        p = by_config.get(config)
        if p is None and len(runs) == int(sizes[config].size):
            continue  # every model run is all invalid: said above
        if p is None:
            notes.append(
                f"config {config}: no item every model run answered (ids differ between "
                "runs): no panel"
            )
            continue
        base = by_config.get(ORIGINAL)
        if base is not None and config != ORIGINAL and set(p.runs) != set(base.runs):
            lacks = [r for r in base.runs if r not in p.runs]
            extra = [r for r in p.runs if r not in base.runs]
            parts = ([f"lacks {', '.join(lacks)}"] if lacks else []) + (
                [f"adds {', '.join(extra)}"] if extra else []
            )
            notes.append(
                f"config {config}: its panel ({len(p.runs)} models) {' and '.join(parts)} "
                f"against {ORIGINAL}'s ({len(base.runs)}): their KR-20, D and the ANOVA "
                "across variants compare different model panels"
            )
        smallest = min(int(sizes[(config, run)]) for run in p.runs)
        if len(p.ids) < smallest:
            notes.append(
                f"config {config}: the panel has {len(p.ids)} item(s) every model run "
                f"answered, fewer than the {smallest} of its smallest run (ids differ "
                "between runs)"
            )
    return notes


def pooled_rows(table: pd.DataFrame, results: Results) -> pd.DataFrame:
    """The model rows of a headline table (run × config × …) that a mean over models pools:
    not those of a run whose every answer in ``original`` or in the row's config is invalid
    (it measured nothing there, `panel.unmeasured`; its panel leaves it out too)."""
    gone = unmeasured_pairs(results.responses)
    rows = table[table["role"] == "model"]
    keys = zip(rows["run"].astype(str), rows["config"].astype(str), strict=True)
    keep = [(run, c) not in gone and (run, ORIGINAL) not in gone for run, c in keys]
    return rows[np.array(keep, dtype=bool)]


def unchecked_notes(results: Results) -> list[str]:
    """One line per nabench run and reason its ids could not be checked against the items of
    the build it records (the build moved away or is a Hub id; it has no such config)."""
    s = results.summaries
    if "ids_unchecked" not in s:
        return []
    unchecked = s[s["ids_unchecked"].notna()]
    columns = (unchecked["run"], unchecked["dataset"], unchecked["ids_unchecked"])
    pairs = dict.fromkeys(zip(*columns, strict=True))
    return [
        f"run {run}: {why} ({dataset}), so its ids were not checked against the build's items"
        for run, dataset, why in pairs
    ]
