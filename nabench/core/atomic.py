"""Atomic single-file writes: write a temp file beside the target, then rename it over.

A killed process leaves the previous file (or none) and at most a hidden `.NAME.*.tmp`,
never a half-written file under the real name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temp path beside `path`: renamed onto `path` if the block succeeds, removed if not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    # mkstemp makes 0600; results and reports are read by others like build files.
    os.chmod(tmp, 0o644)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
