"""A built folder checked as a whole: every file against build.json, build.json against the
card's seal, every config the card lists present, and row counts as recorded.

Any byte changed after the build, a re-encoded parquet file included, breaks a sha256; the
row-level rules (`invariants`) then say what changed in words.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from nabench.core.card_seal import card_digest, card_sha256
from nabench.core.safe_load import UnsafeInput, decode_utf8, load_yaml
from nabench.schemas.manifest import MANIFEST, Manifest, ManifestError, manifest_from_bytes
from nabench.validate.croissant import check_croissant
from nabench.validate.invariants import Violation

README = "README.md"
_FRONT = re.compile(r"\A---\n(.*?\n)?---\n", re.S)
_SHA = re.compile(r"^[0-9a-f]{64}$")
DATA_SUFFIXES = frozenset({".parquet", ".jsonl", ".arrow"})


def _file_violation(where: str, rule: str, message: str) -> Violation:
    return Violation(where, -1, "-", rule, message)


def _safe_relpath(rel: str) -> bool:
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts


def read_manifest(root: Path) -> tuple[Manifest | None, bytes, list[Violation]]:
    """(manifest or None, its bytes, problems reading it)."""
    path = root / MANIFEST
    if not path.is_file():
        return (
            None,
            b"",
            [
                _file_violation(
                    MANIFEST,
                    "manifest_present",
                    "missing: the files cannot be checked against "
                    "their build (not a nabench build folder, or build.json was removed)",
                )
            ],
        )
    raw = path.read_bytes()
    try:
        manifest = manifest_from_bytes(raw, MANIFEST)  # bounded loader, then the model
    except (UnsafeInput, ManifestError) as exc:
        return None, raw, [_file_violation(MANIFEST, "manifest_readable", str(exc))]
    if "files" not in manifest.model_fields_set:
        return (
            None,
            raw,
            [_file_violation(MANIFEST, "manifest_readable", "no 'files' map of sha256 hashes")],
        )
    return manifest, raw, []


def check_files(root: Path, files: Mapping[str, str]) -> list[Violation]:
    """Every listed file exists with its sha256; every data file on disk is listed."""
    out: list[Violation] = []
    for rel, expected in sorted(files.items()):
        path = root / rel
        if not _safe_relpath(rel) or not _SHA.match(expected):
            out.append(_file_violation(MANIFEST, "manifest_entry", f"bad entry {rel!r}"))
        elif path.is_symlink() or not path.is_file():
            out.append(
                _file_violation(
                    rel,
                    "manifest_file_present",
                    "listed in build.json but missing (a config was deleted?)",
                )
            )
        else:
            data = path.read_bytes()
            actual = card_sha256(data) if rel == README else hashlib.sha256(data).hexdigest()
            if actual != expected:
                out.append(
                    _file_violation(
                        rel,
                        "manifest_sha256",
                        "sha256 differs from build.json: the file was edited or re-encoded",
                    )
                )
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or rel in files or rel.startswith(".") or path.is_dir():
            continue
        if path.suffix in DATA_SUFFIXES or rel == README:  # what a loader would read
            out.append(_file_violation(rel, "manifest_file_listed", "not listed in build.json"))
    return out


def card_metadata(readme: str) -> dict[str, Any]:
    """The card's YAML front matter ({} without one), parsed with the bounded loader."""
    match = _FRONT.match(readme)
    if match is None or match.group(1) is None:
        return {}
    data = load_yaml(match.group(1), f"{README} front matter")
    return data if isinstance(data, dict) else {}


def check_card(root: Path, raw_manifest: bytes, counts: Any) -> list[Violation]:
    """The card seals build.json, and every config it lists exists with the recorded rows."""
    path = root / README
    if not path.is_file():
        return [_file_violation(README, "card_present", "missing")]
    try:
        readme = decode_utf8(path.read_bytes(), README)
        metadata = card_metadata(readme)
    except UnsafeInput as exc:
        return [_file_violation(README, "card_readable", str(exc))]
    out: list[Violation] = []
    digest = card_digest(readme)
    if digest is None:
        out.append(_file_violation(README, "card_seal", "names no build.json digest"))
    elif digest != hashlib.sha256(raw_manifest).hexdigest():
        out.append(
            _file_violation(
                MANIFEST,
                "card_seal",
                "sha256 differs from the digest in README.md: build.json was edited after staging",
            )
        )
    counts = counts if isinstance(counts, dict) else {}
    for config in metadata.get("configs") or []:
        name = config.get("config_name") if isinstance(config, dict) else None
        for entry in (config.get("data_files") or []) if isinstance(config, dict) else []:
            rel = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(rel, str) or not _safe_relpath(rel):
                out.append(
                    _file_violation(README, "card_config", f"bad data_files entry {entry!r}")
                )
                continue
            if Path(rel).parts[0] != name:  # a config is read from its own folder only
                out.append(
                    _file_violation(
                        README,
                        "card_config_folder",
                        f"config {name!r} points at {rel!r}, outside its folder {name}/",
                    )
                )
                continue
            if not (root / rel).is_file():
                out.append(
                    _file_violation(
                        rel,
                        "card_config_present",
                        f"config {name!r} is listed in the card but missing",
                    )
                )
                continue
            expected = (counts.get(name) or {}).get(entry.get("split"))
            rows = _parquet_rows(root / rel)
            if expected is not None and rows is not None and rows != expected:
                out.append(
                    _file_violation(
                        rel, "manifest_row_count", f"{rows} rows, build.json says {expected}"
                    )
                )
    return out


def _parquet_rows(path: Path) -> int | None:
    """Rows recorded in a parquet footer (None if not parquet or unreadable: the sha256 and
    row rules report that file)."""
    if path.suffix != ".parquet":
        return None
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, ValueError):
        return None


def build_kind(path: Path) -> str | None:
    """The `kind` a built folder's build.json names (None: no readable manifest). Read with
    the bounded loader, like `read_manifest` (a deeply nested build.json is refused there)."""
    manifest = path / MANIFEST
    if not manifest.is_file():
        return None
    try:
        return manifest_from_bytes(manifest.read_bytes(), MANIFEST).kind
    except (OSError, UnsafeInput, ManifestError):
        return None


def check_no_symlinks(root: Path) -> list[Violation]:
    """No symlink anywhere in a build: a linked config or file would let a loader, a hash or a
    publish read bytes from outside the tree or from another config."""
    out: list[Violation] = []
    for folder, dirs, files in os.walk(root):  # never follows links
        for name in sorted([*dirs, *files]):
            path = Path(folder) / name
            if path.is_symlink():
                rel = path.relative_to(root).as_posix()
                out.append(_file_violation(rel, "no_symlink", "a symlink in the build"))
    return out


def check_build_tree(root: Path) -> list[Violation]:
    """All whole-folder rules of a built folder (see the module docstring)."""
    manifest, raw, problems = read_manifest(root)
    if manifest is None:
        return problems
    files = manifest.files
    return [
        *check_files(root, files),
        *check_card(root, raw, manifest.counts),
        *check_croissant(root, files),
    ]
