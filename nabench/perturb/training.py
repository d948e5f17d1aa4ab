"""From sampled answers to training rows: the NA study's keep rule, SFT pick and DPO pairing.

Pure functions over a `samples` table (no model calls). Rules, in the paper's words (§5.5):

* **Keep rule.** A variant's sample set is kept only if it holds both a right and a wrong
  answer; a set that is all right (`all_correct`) or all wrong (`all_incorrect`) is discarded.
  An answer that does not parse counts as wrong (it is not the gold letter).
* **SFT.** The first correct sample (lowest `sample_index`) of each kept set whose variant is
  one of the SFT variants (default: the standard variant, `original`).
* **DPO.** Correct samples are `chosen`, incorrect ones `rejected`. `zip` pairs the i-th
  correct with the i-th incorrect sample, both in sample order: min(#correct, #incorrect)
  pairs per kept set, no sample used twice. `product` gives every (correct, incorrect) pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

ALL_CORRECT = "all_correct"
ALL_INCORRECT = "all_incorrect"
PAIRINGS = ("zip", "product")


def discard_reason(correct: Sequence[bool]) -> str | None:
    """Why a sample set is discarded, or None when it is kept (it holds a right and a wrong)."""
    if all(correct):
        return ALL_CORRECT
    if not any(correct):
        return ALL_INCORRECT
    return None


def first_correct(correct: Sequence[bool]) -> int | None:
    """Position of the first correct sample, or None."""
    return next((i for i, c in enumerate(correct) if c), None)


def dpo_pairs(correct: Sequence[bool], pairing: str = "zip") -> list[tuple[int, int]]:
    """(chosen, rejected) positions of one sample set under `pairing` (see module docstring)."""
    right = [i for i, c in enumerate(correct) if c]
    wrong = [i for i, c in enumerate(correct) if not c]
    if pairing == "zip":
        return list(zip(right, wrong, strict=False))
    if pairing == "product":
        return [(r, w) for r in right for w in wrong]
    raise ValueError(f"unknown pairing {pairing!r} (known: {', '.join(PAIRINGS)})")


@dataclass(frozen=True)
class Selection:
    """Rows (as dicts) of the `sft`, `dpo` and `discarded` configs."""

    sft: list[dict[str, Any]]
    dpo: list[dict[str, Any]]
    discarded: list[dict[str, Any]]


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def sample_sets(samples: pa.Table) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Samples grouped by (id, variant), in first-seen order, each set in sample order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in samples.select(
        ["id", "variant", "gold", "sample_index", "seed", "prompt", "response", "parsed", "correct"]
    ).to_pylist():
        groups.setdefault((row["id"], row["variant"]), []).append(row)
    for rows in groups.values():
        rows.sort(key=lambda r: r["sample_index"])
    return groups


def select(
    samples: pa.Table, sft_variants: Sequence[str], dpo_variants: Sequence[str], pairing: str
) -> Selection:
    """Apply the keep rule, the SFT pick and the DPO pairing to every sample set."""
    sft: list[dict[str, Any]] = []
    dpo: list[dict[str, Any]] = []
    discarded: list[dict[str, Any]] = []
    for (item_id, variant), rows in sample_sets(samples).items():
        correct = [bool(r["correct"]) for r in rows]
        reason = discard_reason(correct)
        if reason is not None:
            discarded.append(
                {
                    "id": item_id,
                    "variant": variant,
                    "reason": reason,
                    "n_samples": len(rows),
                    "n_correct": sum(correct),
                    "seeds": [r["seed"] for r in rows],
                }
            )
            continue
        if variant in sft_variants:
            first = rows[first_correct(correct)]  # type: ignore[index]  # kept: one is correct
            sft.append(
                {
                    "messages": _user(first["prompt"]) + _assistant(first["response"]),
                    "id": item_id,
                    "variant": variant,
                    "gold": first["gold"],
                    "sample_index": first["sample_index"],
                    "seed": first["seed"],
                }
            )
        if variant in dpo_variants:
            dpo.extend(_dpo_row(rows[c], rows[w]) for c, w in dpo_pairs(correct, pairing))
    return Selection(sft, dpo, discarded)


def _dpo_row(chosen: dict[str, Any], rejected: dict[str, Any]) -> dict[str, Any]:
    return {
        "prompt": _user(chosen["prompt"]),
        "chosen": _assistant(chosen["response"]),
        "rejected": _assistant(rejected["response"]),
        "id": chosen["id"],
        "variant": chosen["variant"],
        "gold": chosen["gold"],
        "chosen_sample_index": chosen["sample_index"],
        "chosen_seed": chosen["seed"],
        "chosen_parsed": chosen["parsed"],
        "rejected_sample_index": rejected["sample_index"],
        "rejected_seed": rejected["seed"],
        "rejected_parsed": rejected["parsed"],
    }
