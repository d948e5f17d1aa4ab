"""nabench: build, validate, label, evaluate and publish perturbed multiple-choice benchmarks.

The packages are layers in data-flow order (see ARCHITECTURE.md); import-linter keeps them so.
"""

from nabench.core.version import __version__

__all__ = ["__version__"]
