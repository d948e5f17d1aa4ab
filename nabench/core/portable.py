"""Published files name no path of the building machine: a local path recorded in a manifest
(`--source /home/<user>/data/mmlu`, a labels file) becomes a path relative to the build when it
lies inside it, else `local:<name>`; where the data came from is then told by the fingerprint
and file hashes recorded beside it. Hub ids (`cais/mmlu`) and repository-relative names are
kept as they are."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError

LOCAL_PREFIX = "local:"
# What makes a string a path on this machine rather than an id: absolute (POSIX or a Windows
# drive), home-relative, or relative to the current folder.
_LOCAL = re.compile(r"^(/|~|\.{1,2}/|[A-Za-z]:[\\/])")


def is_local_path(value: str) -> bool:
    """Whether `value` names a path of this machine (not a Hub id or a plain name)."""
    return bool(value) and "\n" not in value and bool(_LOCAL.match(value))


def portable_path(value: str, root: Path | None = None) -> str:
    """The published form of the local path `value` (see the module docstring)."""
    path = Path(value).expanduser()
    resolved = path.resolve()
    if root is not None:
        try:
            return resolved.relative_to(root.resolve()).as_posix() or "."
        except ValueError:
            pass
    return LOCAL_PREFIX + (resolved.name or path.name or "root")


@dataclass(frozen=True)
class Portable:
    value: Any
    replaced: Mapping[str, str]  # {local text found: its published form}, for free text


def portable_tree(value: Any, root: Path | None = None) -> Portable:
    """A copy of a JSON-like value with every local-path string made portable."""
    found: dict[str, str] = {}

    def walk(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        if isinstance(item, str) and is_local_path(item):
            found[item] = portable_path(item, root)
            return found[item]
        return item

    clean = walk(value)
    # Free text may hold the resolved form of a path given relatively (`../data` as `/srv/data`).
    for text, public in list(found.items()):
        found.setdefault(str(Path(text).expanduser().resolve()), public)
    return Portable(clean, found)


def portable_text(text: str, replaced: Mapping[str, str], root: Path | None = None) -> str:
    """`text` with each local path of `replaced` (longest first) and `root` itself replaced."""
    pairs = dict(replaced)
    if root is not None:
        pairs.setdefault(str(root.resolve()), ".")
    for local in sorted(pairs, key=len, reverse=True):
        text = text.replace(local, pairs[local])
    return text


def missing_local_path(value: str) -> bool:
    """Whether `value` was meant as a local path that does not exist (so it must fail at once,
    not as a Hub id after the client's retries): no file or folder here, and no Hub id: it looks
    like a path (`./x`, `/x`, `~/x`) or is not `ORG/NAME` (one slash). `ORG/NAME` is the Hub's
    even where a folder ORG exists here (the org `nabench` beside the package folder `nabench/`;
    `./ORG/NAME` names the folder)."""
    if Path(value).expanduser().exists():
        return False
    return is_local_path(value) or value.count("/") != 1


def hub_miss_note(value: str) -> str:
    """What a failed Hub read of `ORG/NAME` adds where a folder ORG exists here: the id was
    read as the Hub's, so a mistyped local path (`build/nope`) is said to be one too."""
    first = value.split("/", 1)[0]
    if value.count("/") == 1 and first and Path(first).expanduser().is_dir():
        return f" (read as a Hub id: there is no folder {value!r} here either)"
    return ""


def require_location(
    value: str, error: type[NabenchError] = NabenchError, where: str = "", folder: bool = False
) -> None:
    """Every command's one rule and one message for a location (`--source`, a build folder,
    a Redux location) that is neither here nor a Hub id; `where` names a recipe's field.
    `folder`: a file here is refused too (it was asked of the Hub as a dataset id)."""
    if missing_local_path(value):
        raise error(f"{where}{value!r} does not exist here and is no Hub id (ORG/NAME)")
    if folder and Path(value).expanduser().is_file():
        raise error(f"{where}{value!r} is a file; expected a folder or a Hub id (ORG/NAME)")
