"""inspect_ai task ``nabench/mcq``: a nabench build's multiple-choice configs.

Registered through the ``inspect_ai`` entry point in ``pyproject.toml``, so that
``inspect eval nabench/mcq -T dataset=PATH_OR_REPO -T config=na_keyed -T revision=v1.0.0``
runs on any build, local folder or Hub release. Options are never shuffled: where "None of
the above" and "All of the above" sit is the point of the variants. Accuracy and its
stderr are grouped by config (the NA wordings are configs of one variant, ``na_keyed``);
the stderr is clustered by source item (``nabench_id``), so the same question in several
configs (``-T config=original,na_keyed``) is not counted as independent evidence.

This module imports inspect_ai at import time; nothing else in nabench imports it.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample, hf_dataset
from inspect_ai.scorer import accuracy, choice, grouped, stderr
from inspect_ai.solver import multiple_choice

__all__ = ["mcq", "record_to_sample"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def record_to_sample(record: dict[str, Any], config: str, prefix_ids: bool) -> Sample:
    """One build row as a Sample: choices in build order, the key as a letter target."""
    nabench_id = str(record["id"])
    return Sample(
        input=str(record["question"]),
        choices=[str(c) for c in record["choices"]],
        target=_LETTERS[int(record["answer"])],
        id=f"{config}/{nabench_id}" if prefix_ids else nabench_id,
        metadata={
            "nabench_id": nabench_id,
            "config": config,
            "variant": str(record.get("variant") or config),
            "source": record.get("source"),
            "subject": record.get("subject"),
            "answer": int(record["answer"]),
            "original_answer": record.get("original_answer"),
        },
    )


@task
def mcq(
    dataset: str,
    config: str | list[str] = "na_keyed",
    revision: str | None = None,
    split: str = "test",
) -> Task:
    """A nabench build's config(s) (comma-separated) as multiple-choice questions.

    Args:
        dataset: a built folder or a Hub dataset id.
        config: config name(s), comma-separated (``original,na_keyed``).
        revision: Hub revision (the release tag, e.g. ``v1.0.0``).
        split: the split to evaluate.
    """
    # `-T config=a,b` reaches the task as a list; a plain string may be comma-separated.
    names = config if isinstance(config, list | tuple) else str(config).split(",")
    configs = [str(c).strip() for c in names if str(c).strip()]
    samples: list[Sample] = []
    for name in configs:

        def to_sample(record: dict[str, Any], name: str = name) -> Sample:
            return record_to_sample(record, name, len(configs) > 1)

        samples.extend(
            hf_dataset(
                path=dataset,
                name=name,
                split=split,
                revision=None if revision is None else str(revision),
                sample_fields=to_sample,
                cached=False,  # a local build is rebuilt in place; never read a stale copy
            )
        )
    return Task(
        dataset=MemoryDataset(samples, name=f"{dataset}:{','.join(configs)}"),
        solver=multiple_choice(shuffle=False),  # NA / AotA positions are the point
        scorer=choice(),
        metrics=[
            grouped(accuracy(), "config"),  # not "variant": 4 wordings share `na_keyed`
            grouped(
                stderr(cluster="nabench_id"),
                "config",
                all_label="all_stderr",
                name_template="{group_name}_stderr",
            ),
        ],
    )
