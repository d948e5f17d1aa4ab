"""Notes for the person at the terminal: stderr, so stdout keeps a command's results."""

from __future__ import annotations

import sys


def say(message: str) -> None:
    """One note line on stderr, prefixed so it reads apart from a tool's own output."""
    print(f"nabench: {message}", file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """`42 s`, `7 min`, `3 h 05 min`: how long something takes, rounded for reading."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"
