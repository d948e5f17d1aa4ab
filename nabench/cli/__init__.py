"""The command line: every click group lives in this package; nothing below imports it."""

from nabench.cli.main import main

__all__ = ["main"]
