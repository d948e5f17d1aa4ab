"""Agreement between LLM labels and human labels (raw agreement, Cohen's kappa with CI).

A rater that used one class makes kappa 0 by construction, and both raters using one and
the same class leave it undefined (nan, None in JSON): `note` says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.label.files import read_labels
from nabench.stats.inference import cohen_kappa, json_safe

_CLASS = {True: "applicable", False: "not applicable"}


@dataclass(frozen=True)
class Agreement:
    n: int
    agreement: float
    kappa: float
    ci_low: float
    ci_high: float
    confusion: dict[str, dict[str, int]]
    excluded: dict[str, int]
    note: str | None = None  # why kappa is undefined or 0 by construction

    def to_dict(self) -> dict[str, Any]:
        """The fields as strict JSON values (an undefined kappa or CI bound is None)."""
        out: dict[str, Any] = json_safe(self.__dict__.copy())
        return out


def agreement(llm_labels: Path, human_labels: Path, seed: int = 0) -> Agreement:
    """Join on `id`; only ids with a valid label on both sides are compared (others counted)."""
    llm = read_labels(llm_labels)[["id", "na_applicable"]]
    human = read_labels(human_labels)[["id", "na_applicable"]]
    joined = llm.merge(human, on="id", how="inner", suffixes=("_llm", "_human"))
    if joined.empty:
        raise NabenchError("no ids in common between the two label files")
    valid = joined["na_applicable_llm"].notna() & joined["na_applicable_human"].notna()
    pairs = joined[valid]
    if pairs.empty:
        raise NabenchError("no id has a valid label in both files")
    a = [bool(v) for v in pairs["na_applicable_llm"]]
    b = [bool(v) for v in pairs["na_applicable_human"]]
    result = cohen_kappa(a, b, labels=[True, False], seed=seed)
    names = ["applicable", "not_applicable"]
    confusion = {
        f"llm_{names[i]}": {f"human_{names[j]}": int(result.confusion[i][j]) for j in range(2)}
        for i in range(2)
    }
    return Agreement(
        n=int(result.n),
        agreement=float(result.agreement),
        kappa=float(result.kappa),
        ci_low=float(result.ci_low),
        ci_high=float(result.ci_high),
        confusion=confusion,
        excluded={
            "only_in_llm": int(len(llm) - len(joined)),
            "only_in_human": int(len(human) - len(joined)),
            "invalid_on_either_side": int((~valid).sum()),
        },
        note=_one_class_note(a, b),
    )


def _one_class_note(llm: list[bool], human: list[bool]) -> str | None:
    """Why kappa says nothing when a rater used one class (None when both used both)."""
    one_llm, one_human = len(set(llm)) == 1, len(set(human)) == 1
    if one_llm and one_human and llm[0] == human[0]:
        return (
            f"kappa undefined: the LLM and the human labels are all {_CLASS[llm[0]]} "
            "(chance agreement is 1); only raw agreement is reported"
        )
    if one_llm and one_human:
        return (
            f"kappa is 0 by construction: the LLM labels are all {_CLASS[llm[0]]}, "
            f"the human labels all {_CLASS[human[0]]}"
        )
    if one_llm or one_human:
        who, value = ("LLM", llm[0]) if one_llm else ("human", human[0])
        return (
            f"kappa is 0 by construction: the {who} labels are all {_CLASS[value]} "
            "(a rater with one class agrees no better than chance)"
        )
    return None
