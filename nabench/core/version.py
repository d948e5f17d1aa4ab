"""The installed nabench version (recorded in every manifest and card)."""

from importlib.metadata import PackageNotFoundError, version

from packaging.version import InvalidVersion, Version

try:
    __version__ = version("nabench")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+local"


# -- release versions (recipes, publish tags, card changelogs) --------------------------------
# One rule everywhere: SemVer's shape (X.Y.Z, optional -pre-release, optional +build) parsed by
# `packaging.version`; build metadata never orders (SemVer precedence), a pre-release sorts
# before its release, and pre-releases order numerically (rc.2 < rc.10).


def release_version(text: str) -> Version:
    """Parse a release version; ValueError (one line) unless it is X.Y.Z[-pre][+build] with
    a pre-release packaging understands (rc.1, alpha, beta.2, dev, ...)."""
    core, plus, build = text.partition("+")
    release, dash, pre = core.partition("-")
    parts = release.split(".")
    canonical = len(parts) == 3 and all(p.isdigit() and (p == "0" or p[0] != "0") for p in parts)
    if not canonical or (plus and not build) or (dash and not pre):
        raise ValueError(f"version {text!r} is not semantic (X.Y.Z[-pre][+build])")
    try:
        return Version(text)
    except InvalidVersion:
        raise ValueError(f"version {text!r} is not semantic (X.Y.Z[-pre][+build])") from None


def version_order(text: str) -> Version:
    """Sort key of a release version: build metadata is ignored (SemVer precedence)."""
    return Version(release_version(text).public)
