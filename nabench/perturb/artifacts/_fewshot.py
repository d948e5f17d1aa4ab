"""Few-shot selection: which pool items every test item gets as examples.

Every test item of one subject (the group key; "" when the source has none) gets the same
examples, so per-subject prompts share one prefix. Random draws use an RNG seeded by
(recipe seed, dataset, subject) — `item_rng(seed, f"{dataset}/{subject}", purpose)` — so a
build is reproducible and a subject's draw does not change when other subjects are removed.

Protocols:

* ``same_subject``: the first k pool items of the item's subject, in pool order
  (MMLU: the 5 `dev` examples of the subject).
* ``random``: k pool items drawn without replacement from the whole pool (ARC-Challenge:
  25 of `train`; HellaSwag: 10 of `train`; GPQA: 5 of `gpqa_extended` minus the evaluated
  config's records). The draw is a partial Fisher-Yates shuffle, so a smaller k is a prefix
  of a larger one (the 20-shot ARC examples are the first 20 of the 25-shot ones).
"""

from __future__ import annotations

import random
from typing import Literal

import numpy as np

from nabench.core.errors import NabenchError
from nabench.core.rng import item_rng
from nabench.perturb.artifacts._layout import FewShotPlan, Items

Protocol = Literal["same_subject", "random"]


def draw_without_replacement(rng: random.Random, n: int, k: int) -> list[int]:
    """k distinct indices of range(n): the first k steps of a Fisher-Yates shuffle (O(k))."""
    if k > n:
        raise ValueError(f"cannot draw {k} of {n}")
    moved: dict[int, int] = {}
    out: list[int] = []
    for i in range(k):
        j = rng.randrange(i, n)
        out.append(moved.get(j, j))
        moved[j] = moved.get(i, i)
    return out


def prior_examples(pool: Items, rows: list[int], rng: random.Random) -> list[tuple[int, int, bool]]:
    """One option per few-shot item for the individual-prior prompts, True/False balanced.

    k // 2 examples show the gold option (True) and the rest a random distractor (False) whose
    text differs from the gold text; which positions are True is shuffled.
    """
    k = len(rows)
    labels = [True] * (k // 2) + [False] * (k - k // 2)
    rng.shuffle(labels)
    out: list[tuple[int, int, bool]] = []
    for j, gold in zip(rows, labels, strict=True):
        answer = int(pool.answer[j])
        if gold:
            out.append((j, answer, True))
        else:
            opts = pool.opts[j]
            wrong = [c for c in range(len(opts)) if opts[c] != opts[answer]]
            if not wrong:
                raise NabenchError(f"few-shot item {pool.ids[j]} has no distractor text")
            out.append((j, rng.choice(wrong), False))
    return out


def plan_fewshot(
    test: Items,
    pool: Items,
    *,
    protocol: Protocol,
    k: int,
    seed: int,
    dataset: str,
) -> FewShotPlan:
    """The few-shot plan of every test item (groups in order of first appearance)."""
    keys: list[str] = []
    index: dict[str, int] = {}
    group = np.empty(len(test), dtype=np.int64)
    for i, subject in enumerate(test.subject):
        key = subject or ""
        g = index.get(key)
        if g is None:
            g = index[key] = len(keys)
            keys.append(key)
        group[i] = g
    by_subject: dict[str, list[int]] = {}
    if protocol == "same_subject":
        for j, subject in enumerate(pool.subject):
            by_subject.setdefault(subject or "", []).append(j)
    rows: list[list[int]] = []
    prior: list[list[tuple[int, int, bool]]] = []
    for key in keys:
        if protocol == "same_subject":
            candidates = by_subject.get(key, [])
            if len(candidates) < k:
                raise NabenchError(
                    f"few-shot pool has {len(candidates)} usable item(s) of subject "
                    f"{key or '(none)'!r}, {k} needed"
                )
            chosen = candidates[:k]
        elif protocol == "random":
            if len(pool) < k:
                raise NabenchError(f"few-shot pool has {len(pool)} usable item(s), {k} needed")
            chosen = draw_without_replacement(
                item_rng(seed, f"{dataset}/{key}", "fewshot"), len(pool), k
            )
        else:
            raise NabenchError(f"unknown few-shot protocol {protocol!r}")
        rows.append(chosen)
        prior.append(
            prior_examples(pool, chosen, item_rng(seed, f"{dataset}/{key}", "prior_fewshot"))
        )
    return FewShotPlan(group=group, keys=keys, rows=rows, prior=prior)
