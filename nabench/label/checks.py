"""What a label run must get right before anything is built from it.

- An outage is not a label: when more than `max_error_share` of the requests never got an
  answer (dead endpoint, HTTP 5xx, timeouts; not a model's bad JSON), the run fails with the
  errors named, and nothing is built (answers already received stay cached for the rerun).
- A long model job starts only when asked: `LabelPlan` says what would run, and a build
  that was not confirmed (`--labels llm` / `--yes`) stops with the plan instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from nabench.core.console import duration, say
from nabench.core.errors import NabenchError
from nabench.llm import ChunkHook, JsonResult

# Requests a build may send to a model without being asked (about a minute of the 135M
# local model on 2 CPUs); more than this needs `--labels llm` or `--yes`.
CONFIRM_ABOVE = 64


class LabelingFailed(NabenchError):
    """The label run cannot be trusted (an outage, or labels that match nothing)."""

    exit_code = 1


class ConfirmationNeeded(NabenchError):
    """A long model job would start; the user has to ask for it."""


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


@dataclass(frozen=True)
class LabelPlan:
    """What a label run would do: `to_compute` requests reach the model, the rest are cached."""

    model: str
    items: int
    cached: int

    @property
    def to_compute(self) -> int:
        return self.items - self.cached

    def lines(self, measured: str | None = None) -> list[str]:
        return [
            f"plan: label {self.items:,} eligible item(s) with {self.model}",
            f"plan: cached {self.cached:,}, to compute {self.to_compute:,} request(s); "
            f"estimate: {measured or 'unmeasured (measured on the first chunk once started)'}",
        ]

    def require_confirmation(self, confirmed: bool) -> None:
        """Print the plan of a long job; stop unless it was confirmed."""
        if self.to_compute <= CONFIRM_ABOVE:
            return
        for line in self.lines():
            say(line)
        if not confirmed:
            raise ConfirmationNeeded(
                f"not started: labeling {self.to_compute:,} item(s) with {self.model} is a long "
                "model job; rerun with --labels llm (or --yes) to start it, or build without "
                "a model with --labels none / --labels FILE"
            )


def estimate_hook(plan: LabelPlan) -> ChunkHook:
    """A `run_cached` chunk hook that prints, once, the estimate measured on the first chunk."""
    done: list[bool] = []

    def hook(finished: int, total: int, seconds: float) -> None:
        if done or finished <= 0 or plan.to_compute <= CONFIRM_ABOVE:
            return
        done.append(True)
        left = seconds / finished * (total - finished)
        say(
            f"plan: measured {finished} request(s) in {seconds:.1f} s: about {duration(left)} "
            f"for the remaining {total - finished:,}"
        )

    return hook
