"""Which source items a build uses: all of them, the first N (`--limit`), or a seeded sample
stratified by subject (`--sample`).

The sample is drawn from the loaded split before anything else runs, so every row it yields
is the full build's row for that id: sampling only chooses ids, it never changes an item.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from nabench.core.errors import NabenchError
from nabench.core.rng import Draw, item_hashes

SAMPLE_PURPOSE = "sample"
SAMPLE_DRAW = Draw(
    SAMPLE_PURPOSE,
    "hash",
    "`--sample` takes, within each subject, its quota of the items that passed the audit "
    "with the smallest `H` (ties by id)",
)


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Items per stratum for a sample of `n`: one per stratum first (so every subject is
    covered when n allows), the rest proportional to what is left (largest remainder, ties by
    stratum name), never more than a stratum holds."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    names = sorted(sizes)
    if n < len(names):  # cannot cover every stratum: the largest strata get one each
        chosen = sorted(names, key=lambda s: (-sizes[s], s))[:n]
        return {s: int(s in chosen) for s in names}
    quota = {s: min(1, sizes[s]) for s in names}
    rest = n - sum(quota.values())
    spare = {s: sizes[s] - quota[s] for s in names}
    pool = sum(spare.values())
    exact = {s: rest * spare[s] / pool for s in names} if pool else dict.fromkeys(names, 0.0)
    floors = {s: int(exact[s]) for s in names}
    left = rest - sum(floors.values())
    by_remainder = sorted(names, key=lambda s: (-(exact[s] - floors[s]), s))
    for s in by_remainder[:left]:
        floors[s] += 1
    return {s: quota[s] + floors[s] for s in names}


def stratified_sample(
    ids: Sequence[str], subjects: Sequence[str | None], n: int, seed: int
) -> np.ndarray:
    """Sorted row positions of a sample of `n` items stratified by subject. Within a subject
    the items with the smallest per-item hash of (seed, "sample", id) are taken, so an item's
    chance never depends on the order of the rows."""
    strata: dict[str, list[int]] = defaultdict(list)
    for i, subject in enumerate(subjects):
        strata[subject or ""].append(i)
    quota = allocate({s: len(rows) for s, rows in strata.items()}, n)
    keys = item_hashes(seed, ids, SAMPLE_PURPOSE)
    picked: list[int] = []
    for subject, rows in strata.items():
        ranked = sorted(rows, key=lambda i: (int(keys[i]), ids[i]))
        picked.extend(ranked[: quota[subject]])
    return np.array(sorted(picked), dtype=np.int64)


def check_sample_size(n: int, available: int, what: str, verb: str) -> None:
    """A sample is of fewer items than there are: `--sample N` over M <= N items would be
    all of them under the name of a sample (and the card or run would say "sample of N")."""
    if n > available:
        raise NabenchError(
            f"--sample {n} is more than the {available} {what}: use a smaller --sample, or "
            f"none to {verb} them all"
        )


def select_items(
    items: pa.Table, *, limit: int | None = None, sample: int | None = None, seed: int = 0
) -> pa.Table:
    """The rows a build uses: `limit` takes the first N, `sample` a stratified seeded sample
    (in source order); at most one of them."""
    if limit is not None and sample is not None:
        raise NabenchError("--limit and --sample exclude each other: use one of them")
    if limit is not None:
        return items.slice(0, limit)
    if sample is None:
        return items
    if sample < 1:
        raise NabenchError(f"--sample must be at least 1 (got {sample})")
    ids = items.column("id").to_pylist()
    subjects = items.column("subject").to_pylist()
    return items.take(pa.array(stratified_sample(ids, subjects, sample, seed)))
