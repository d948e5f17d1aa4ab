"""A long model job starts only when asked.

`JobPlan` says what a job would send: how many requests, how many the cache already answers.
A job with more than `CONFIRM_ABOVE` requests to compute prints its plan and stops unless the
user asked for it (`--yes`, or `--labels llm` for labeling); once started, `estimate_hook`
prints the duration measured on the first finished chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

from nabench.core.console import duration, say
from nabench.core.errors import NabenchError
from nabench.llm._run import ChunkHook

# Requests a build may send to a model without being asked (about a minute of the 135M
# local model on 2 CPUs); more than this needs `--yes` (or `--labels llm`).
CONFIRM_ABOVE = 64


class ConfirmationNeeded(NabenchError):
    """A long model job would start; the user has to ask for it."""


@dataclass(frozen=True)
class JobPlan:
    """What a model job would do: `to_compute` requests reach the model, the rest are cached.

    `task` names the job in the plan's first line ("label 14,042 eligible item(s)");
    `consent` is the flag that starts it, `alternative` what to do instead.
    """

    task: str
    model: str
    requests: int
    cached: int
    consent: str = "--yes"
    alternative: str = "or lower --limit"

    @property
    def to_compute(self) -> int:
        return self.requests - self.cached

    @property
    def long(self) -> bool:
        return self.to_compute > CONFIRM_ABOVE

    def lines(self) -> list[str]:
        return [
            f"plan: {self.task} with {self.model}",
            f"plan: cached {self.cached:,}, to compute {self.to_compute:,} request(s); "
            "estimate: unmeasured (measured on the first chunk once started)",
        ]

    def require_confirmation(self, confirmed: bool) -> None:
        """Print the plan of a long job; stop unless it was confirmed."""
        if not self.long:
            return
        for line in self.lines():
            say(line)
        if not confirmed:
            raise ConfirmationNeeded(
                f"not started: {self.task} is a long model job ({self.to_compute:,} request(s) "
                f"with {self.model}); rerun with {self.consent} to start it, {self.alternative}"
            )


def estimate_hook(plan: JobPlan) -> ChunkHook:
    """A `run_cached` chunk hook that prints, once, the estimate measured on the first chunk."""
    done: list[bool] = []

    def hook(finished: int, total: int, seconds: float) -> None:
        if done or finished <= 0 or not plan.long:
            return
        done.append(True)
        left = seconds / finished * (total - finished)
        say(
            f"plan: measured {finished} request(s) in {seconds:.1f} s: about {duration(left)} "
            f"for the remaining {total - finished:,}"
        )

    return hook
