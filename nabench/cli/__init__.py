"""The command line: every click group lives in this package; nothing below imports it.

`main` is the root command (`nabench.cli.root`, cheap to import); its commands live in the
submodule `nabench.cli.main`, imported when a command runs. Importing a submodule binds it as
an attribute of its package, which would make `from nabench.cli import main` return that
module once it is loaded; the package's module class keeps `main` the root command instead."""

import sys
import types

from nabench.cli.root import main as _root


class _Package(types.ModuleType):
    @property
    def main(self) -> object:
        return _root

    @main.setter
    def main(self, value: object) -> None:
        """The import system binding the `main` submodule: it stays in `sys.modules` only."""


sys.modules[__name__].__class__ = _Package

__all__ = ["main"]
