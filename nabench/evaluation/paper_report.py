"""The NA study's own tables in `nabench report --protocol na-paper` (the preset's `report`
section names them), each under every category grouping the preset lists:

* ``paper_table1_<grouping>``: discrimination index per category × variant: the mean (and
  SD) of the per-item D of `discrimination_table` over the category's items;
* ``paper_table2_<grouping>``: KR-20 per category × variant as the mean ± SD over the
  category's subjects (`nabench.stats.paper_tables.kr20_mean_sd_by_category`);
* ``anova_<grouping>``: the per-category ANOVA of per-subject KR-20 across variants;
* ``paper_table3``: accuracy per NA phrasing per model (the report's `phrasing` table).

Groupings: ``lm_eval`` (the report's default) and ``hendrycks`` (MMLU's own categories.py);
they differ in one subject, anatomy. Like the panel statistics, these need ≥ 5 models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from nabench.evaluation.panel import Panel, anova_table
from nabench.evaluation.results import category_of
from nabench.schemas.protocol import Protocol
from nabench.stats.paper_tables import kr20_mean_sd_by_category

__all__ = ["paper_tables"]


def paper_tables(
    tables: Mapping[str, pd.DataFrame],
    panels: Sequence[Panel],
    configs: Sequence[str],
    protocol: Protocol,
) -> dict[str, pd.DataFrame]:
    """The tables `protocol.report` asks for, from the report's own tables and panels."""
    spec = protocol.report
    if spec is None:
        return {}
    out: dict[str, pd.DataFrame] = {}
    enough = [p for p in panels if p.enough]
    for grouping in spec.categories:
        if "discrimination_by_category_variant" in spec.tables:
            d = tables["discrimination"]
            d = d.assign(category=[category_of(s, grouping) for s in d["subject"]])
            out[f"paper_table1_{grouping}"] = (
                d.groupby(["category", "config"], sort=True)["D"]
                .agg(n_items="size", mean_D="mean", sd_D="std")
                .reset_index()
            )
        if "kr20_mean_sd_over_subjects" in spec.tables:
            frames = [
                kr20_mean_sd_by_category(
                    {p.config: p.scores},
                    p.subjects,
                    {s: category_of(s, grouping) for s in set(p.subjects)},
                )
                for p in enough
            ]
            out[f"paper_table2_{grouping}"] = (
                pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            )
        kr = tables["kr20_subject"]
        kr = kr.assign(category=[category_of(s, grouping) for s in kr["subject"]])
        out[f"anova_{grouping}"] = anova_table(kr, configs)
    if "accuracy_by_phrasing" in spec.tables:
        out["paper_table3"] = tables["phrasing"]
    return out
