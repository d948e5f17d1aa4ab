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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from nabench.core.console import say
from nabench.core.errors import NabenchError
from nabench.core.safe_load import DEFAULT_LIMITS, ParseLimits, load_json_file

__all__ = [
    "OutError",
    "OutFile",
    "OutKind",
    "OutLock",
    "PreviousBuild",
    "beside",
    "check_cache",
    "check_file",
    "check_folder",
    "check_out",
    "check_parents",
    "holds_record",
    "json_with",
    "parquet_with",
    "remove_stale",
    "say",
]

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


def check_parents(out: Path, flag: str = "--out ") -> None:
    """Refuse an `--out` (or the target `flag` names) below a file or a broken link
    (`--out notes.txt/sub`): making its folder would fail deep inside the command, after
    work was done."""
    for parent in Path(out).expanduser().absolute().parents:
        broken = parent.is_symlink() and not parent.exists()
        if broken or (parent.exists() and not parent.is_dir()):
            raise OutError(
                f"{flag}{out}: {parent} is {'a broken link' if broken else 'a file'}, not a "
                f"folder; nothing was written (choose another {flag.strip(' :')})"
            )


def _check_place(out: Path, what: str) -> bool:
    """Refuse a link, a file, home or root as `out`, or an `out` below a file; whether `out`
    exists (as a folder).

    Checked on the path as given, before anything resolves it: `resolve()` follows a link,
    and a link's target is someone else's folder."""
    check_parents(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutError(
            f"--out {out} is a file or a link, not {what}; nothing was written "
            "(choose a new folder)"
        )
    if not out.exists():
        return False
    if out.resolve() in (Path.home().resolve(), Path(out.anchor)):
        raise OutError(f"--out {out} is your home or the root folder; choose a new folder")
    return True


def check_out(out: Path) -> PreviousBuild | None:
    """The build `out` holds (None if `out` is new or an empty folder); OutError otherwise."""
    if not _check_place(out, "a build folder"):
        return None
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


def _restore_interrupted(out: Path) -> Path | None:
    """A build killed between the swap's two renames left the previous tree in
    `.NAME.old-*/tree` and no `out`: put it back (deleting it lost both trees)."""
    if out.exists() or out.is_symlink():
        return None
    olds = [p / "tree" for p in out.parent.glob(f".{out.name}.old-*") if (p / "tree").is_dir()]
    if not olds:
        return None
    latest = max(olds, key=lambda p: p.stat().st_mtime)
    os.rename(latest, out)
    return out


def remove_stale(out: Path) -> list[Path]:
    """Delete temp folders earlier builds of `out` left (call only while holding the lock);
    a previous build an interrupted swap moved aside is restored to `out` first."""
    if _restore_interrupted(out) is not None:
        say(f"restored {out}: a build was interrupted while replacing it")
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


@dataclass(frozen=True)
class OutKind:
    """What a command other than a build writes into `--out`: `owns(rel, path)` says whether
    an existing file (relative posix path, absolute path) is one this command wrote, so
    writing there again loses nothing of the user's."""

    what: str  # "an lm-eval export", for the messages
    owns: Callable[[str, Path], bool]
    top_only: bool = False  # judge only the top level (a results root: one folder per run)
    # Whether an existing `--out` holds this command's record (its report.json, say): without
    # one, a file is not taken for this command's by its name alone (a user's own report.md).
    wrote: Callable[[Path], bool] | None = None


def holds_record(
    name: str, keys: Iterable[str], limits: ParseLimits = DEFAULT_LIMITS
) -> Callable[[Path], bool]:
    """An `OutKind.wrote` check: `out/name` is a JSON object (read with the bounded loader)
    holding every one of `keys`, i.e. the record a command writes first into its folder."""
    wanted = frozenset(keys)

    def wrote(out: Path) -> bool:
        try:
            record = load_json_file(out / name, limits)
        except (OSError, NabenchError):
            return False
        return isinstance(record, dict) and record.keys() >= wanted

    return wrote


def _overlap(out: Path, other: Path) -> str | None:
    a, b = out.resolve(), other.resolve()
    if a == b:
        return "is"
    if a.is_relative_to(b):
        return "is inside"
    if b.is_relative_to(a):
        return "holds"
    return None


def _foreign(out: Path, kind: OutKind) -> list[str]:
    """Files under `out` this command did not write (the first few; stops early, so a
    mistaken `--out` on a large tree costs little)."""
    found: list[str] = []
    ours = kind.wrote is None or kind.wrote(out)
    for root, dirs, files in os.walk(out):  # does not follow links into other trees
        base = Path(root)
        links = [d for d in dirs if (base / d).is_symlink()]
        if kind.top_only:
            files = [*files, *[d for d in dirs if not (base / d).is_symlink()]]
            dirs.clear()
        for name in sorted([*files, *links]):
            path = base / name
            rel = path.relative_to(out).as_posix()
            plain = path.is_dir() if kind.top_only else path.is_file()
            if path.is_symlink() or not plain or not ours or not kind.owns(rel, path):
                found.append(rel)
                if len(found) > 3:
                    return found
    return found


def check_folder(out: Path, kind: OutKind, protect: Iterable[tuple[str, Path]] = ()) -> None:
    """Refuse an `--out` this command must not write into: a link, a file, home or root, a
    folder holding files the command did not write, or one that is, holds or lies inside a
    `protect`ed input ((label, path): the build being exported, the results being read)."""
    out = Path(out).expanduser().absolute()
    for label, path in protect:
        how = _overlap(out, Path(path))
        if how is not None:
            raise OutError(
                f"--out {out} {how} {label} {path}; nothing was written: choose a folder outside it"
            )
    if not _check_place(out, kind.what):
        return
    foreign = _foreign(out, kind)
    if foreign:
        raise OutError(
            f"--out {out} holds files that are not {kind.what} ({_shown(foreign)}); "
            "nothing was written: choose a new or empty folder"
        )


@dataclass(frozen=True)
class OutFile:
    """What a command that writes one file `--out` (and side files `<stem><suffix>` beside
    it: a summary, a quarantine, run statistics) may replace: only files it wrote, each
    recognised by its own check."""

    what: str  # "`nabench label`", for the messages
    suffix: str  # ".parquet"
    owns: Callable[[Path], bool]
    beside: tuple[tuple[str, Callable[[Path], bool]], ...] = ()


def beside(out: Path, suffix: str) -> Path:
    """The side file `<stem><suffix>` of a one-file `--out`: where the command writes it and
    what `check_file` guards, one rule for both."""
    return out.with_name(f"{out.stem}{suffix}")


def check_cache(cache: Path, out: Path, kind: OutFile | None = None) -> None:
    """Refuse a response cache the command would itself destroy, before any request: a file
    it writes (a one-file `--out` of `kind`, or a side file beside it), or, with no `kind`
    (a build), a path inside the `--out` folder that the build's commit replaces."""
    where = Path(cache).expanduser().resolve()
    if kind is None:
        if where.is_relative_to(Path(out).expanduser().resolve()):
            raise OutError(
                f"--cache {cache} is in --out {out}, which the build replaces: put it outside"
            )
        return
    written = [out, *(beside(out, suffix) for suffix, _ in kind.beside)]
    if any(where == path.expanduser().resolve() for path in written):
        raise OutError(
            f"--cache {cache} is a file this command writes (--out {out} or beside it): "
            "put it elsewhere"
        )


def parquet_with(columns: Iterable[str]) -> Callable[[Path], bool]:
    """An `OutFile` check: a parquet file whose schema holds every one of `columns`."""
    wanted = frozenset(columns)

    def owns(path: Path) -> bool:
        import pyarrow as pa  # here: the guard is on every command's start-up path
        import pyarrow.parquet as pq

        try:
            return path.is_file() and set(pq.read_schema(path).names) >= wanted
        except (OSError, pa.ArrowInvalid):
            return False

    return owns


def json_with(keys: Iterable[str]) -> Callable[[Path], bool]:
    """An `OutFile` check: a JSON object file holding every one of `keys`."""
    wanted = frozenset(keys)
    return lambda path: holds_record(path.name, wanted)(path.parent)


def check_file(out: Path, kind: OutFile) -> None:
    """Refuse a file `--out` (or a side file beside it) this command did not write, a folder,
    another format's name, or a path below a file: before any model call is made."""
    check_parents(out)
    if out.suffix.lower() != kind.suffix:
        raise OutError(
            f"--out {out}: {kind.what} writes {kind.suffix} files; name it *{kind.suffix}"
        )
    if out.is_dir():
        raise OutError(f"--out {out} is a folder; give a file, e.g. {out / ('out' + kind.suffix)}")
    sides = [(beside(out, suffix), owns) for suffix, owns in kind.beside]
    for path, owns in ((out, kind.owns), *sides):
        if (path.exists() or path.is_symlink()) and not owns(path):
            raise OutError(
                f"--out {out}: {path} exists and was not written by {kind.what}; nothing was "
                "written: choose another path"
            )
