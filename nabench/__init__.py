"""nabench: build, validate, label, evaluate and publish perturbed multiple-choice benchmarks."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nabench")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
