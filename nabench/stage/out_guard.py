"""What `--out` may replace, and one build at a time per target.

A build only ever replaces a folder that a nabench build wrote: a `build.json` with
`nabench_version` and a `files` map, and no file besides those it lists. Anything else
(`--out .` in a project, `--out ~`, `--out data.parquet`) is refused before a byte is written.
A lock file beside the target (`.NAME.lock`, `flock`) serialises builds into one target; temp
folders a killed build left behind (`.NAME.tmp-*`, `.NAME.old-*`) are removed by the next
build of that target, under the lock.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from nabench.core.console import say
from nabench.core.errors import NabenchError

__all__ = ["OutError", "OutLock", "PreviousBuild", "check_out", "remove_stale", "say"]

MANIFEST = "build.json"
# Folders a pipeline writes into its build after staging (derived from the staged tables and
# rewritten by every run), by manifest `kind`: not user files.
DERIVED_DIRS: dict[str, tuple[str, ...]] = {"selfknow": ("report/",)}


class OutError(NabenchError):
    """`--out` names something a build must not replace."""


@dataclass(frozen=True)
class PreviousBuild:
    """The build `out` holds now (None fields for a new or empty folder)."""

    path: Path
    recipe: str | None
    version: str | None
    nabench_version: str | None

    def describe(self) -> str:
        what = " ".join(p for p in (self.recipe, f"v{self.version}" if self.version else None) if p)
        return f"{what or 'a build'} (nabench {self.nabench_version or '?'})"


def _manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of a nabench build at `path`, or None (absent, unreadable, foreign)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "nabench_version" not in data:
        return None
    return data if isinstance(data.get("files"), dict) else None


def _shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def check_out(out: Path) -> PreviousBuild | None:
    """The build `out` holds (None if `out` is new or an empty folder); OutError otherwise."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutError(
            f"--out {out} is a file or a link, not a build folder; nothing was written "
            "(choose a new folder, e.g. build/NAME)"
        )
    if not out.exists():
        return None
    if out in (Path.home().resolve(), Path(out.anchor)):
        raise OutError(f"--out {out} is your home or the root folder; choose a new folder")
    top = sorted(p.name for p in islice(out.iterdir(), 50))
    if not top:
        return None
    manifest = _manifest(out / MANIFEST)
    if manifest is None:
        raise OutError(
            f"--out {out} holds files that are not a nabench build (no nabench {MANIFEST}; "
            f"found {_shown(top)}); nothing was replaced: choose a new or empty folder"
        )
    listed = {*manifest["files"], MANIFEST}
    found = (p.relative_to(out).as_posix() for p in out.rglob("*") if not p.is_dir())
    derived = DERIVED_DIRS.get(str(manifest.get("kind")), ())
    extra = sorted(rel for rel in found if rel not in listed and not rel.startswith(derived))
    if extra:
        raise OutError(
            f"--out {out} is a nabench build but also holds {len(extra)} file(s) it did not "
            f"write ({_shown(extra)}); nothing was replaced: move them away or choose "
            "another folder"
        )
    recipe = manifest.get("recipe")
    recipe = recipe if isinstance(recipe, dict) else {}
    return PreviousBuild(
        out,
        str(recipe["name"]) if recipe.get("name") else None,
        str(recipe["version"]) if recipe.get("version") else None,
        str(manifest.get("nabench_version")),
    )


def remove_stale(out: Path) -> list[Path]:
    """Delete temp folders earlier builds of `out` left (call only while holding the lock)."""
    removed = []
    for pattern in (f".{out.name}.tmp-*", f".{out.name}.old-*"):
        for path in out.parent.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


class OutLock:
    """An exclusive `flock` on `.NAME.lock` beside `out`, removed again on release.

    The file is unlinked while still locked; a waiter that then gets the lock on the
    unlinked inode notices (inode changed) and retries on the new file, so two builds never
    both believe they hold the lock.
    """

    def __init__(self, out: Path) -> None:
        self.path = out.parent / f".{out.name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                holder = self._holder()
                raise OutError(
                    f"another nabench build is writing {self.path.parent / self.path.name[1:-5]}"
                    f"{f' (pid {holder})' if holder else ''}; wait for it to finish or choose "
                    "another --out"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return
            os.close(fd)  # the holder removed the file after we opened it: retry

    def _holder(self) -> str | None:
        try:
            return self.path.read_text().strip() or None
        except OSError:
            return None

    def release(self) -> None:
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None
