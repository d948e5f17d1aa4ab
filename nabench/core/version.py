"""The installed nabench version (recorded in every manifest and card)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nabench")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+local"
