"""What a label run must get right before anything is built from it.

- An outage is not a label: when more than `max_error_share` of the requests never got an
  answer (dead endpoint, HTTP 5xx, timeouts; not a model's bad JSON), the run fails with the
  errors named, and nothing is built (answers already received stay cached for the rerun).
- A long model job starts only when asked: `label_job` says what would run (a
  `nabench.llm.JobPlan`), and a build that was not confirmed (`--labels llm` / `--yes`) stops
  with the plan instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from nabench.core.errors import NabenchError
from nabench.llm import JobPlan, JsonResult


class LabelingFailed(NabenchError):
    """The label run cannot be trusted (an outage, or labels that match nothing)."""

    exit_code = 1


def check_transport(
    results: Sequence[JsonResult], max_error_share: float, where: str, fix: str
) -> None:
    """Raise LabelingFailed when more than `max_error_share` of `results` never got an answer."""
    failed = [r.error or "unknown error" for r in results if r.backend_error]
    if not failed or len(failed) <= max_error_share * len(results):
        return
    kinds = Counter(e.removeprefix("backend: ") for e in failed).most_common(3)
    shown = "; ".join(f"{n}x {text[:160]}" for text, n in kinds)
    raise LabelingFailed(
        f"labeling with {where}: {len(failed)} of {len(results)} request(s) got no answer "
        f"({shown}); nothing was built and the previous build is untouched; {fix}"
    )


def label_job(model: str, items: int, cached: int) -> JobPlan:
    """The plan of a label run: one request per eligible item."""
    return JobPlan(
        f"label {items:,} eligible item(s)",
        model,
        items,
        cached,
        consent="--labels llm (or --yes)",
        alternative="or build without a model with --labels none / --labels FILE",
    )
