"""Publish: a staged build -> a plan (adds, deletes, tag) -> the Hub or a local git repository."""

from nabench.publish.plan import (
    PlannedFile,
    PublishError,
    PublishPlan,
    RemoteState,
    make_plan,
    parse_target,
)

__all__ = [
    "PlannedFile",
    "PublishError",
    "PublishPlan",
    "RemoteState",
    "make_plan",
    "parse_target",
]
