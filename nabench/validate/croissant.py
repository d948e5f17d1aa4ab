"""croissant.json of a built folder: valid for mlcroissant, and its files those of build.json.

Its own bytes are covered by build.json's sha256 (`build_tree.check_files`); this checks what
a reader of the Croissant file alone relies on: that mlcroissant accepts it (no error; its
warnings, e.g. the missing `datePublished` of an unreleased build, are not violations) and that
each file it lists carries the sha256 build.json records, and every parquet file is listed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nabench.core.safe_load import UnsafeInput, load_json_file
from nabench.validate.invariants import Violation

CROISSANT = "croissant.json"


def _violation(rule: str, message: str) -> Violation:
    return Violation(CROISSANT, -1, "-", rule, message)


def check_croissant(root: Path, files: Mapping[str, str]) -> list[Violation]:
    """The croissant rules of a folder whose build.json lists `files` (none without one:
    builds made before croissant.json existed have none, and say so in build.json)."""
    path = root / CROISSANT
    if CROISSANT not in files or not path.is_file():
        return []  # a listed but missing file is `manifest_file_present`'s violation
    try:
        data = load_json_file(path)  # bounded: size, nesting, integers
    except UnsafeInput as exc:
        return [_violation("croissant_valid", exc.problem)]
    # JSON-LD may name a remote @context, which mlcroissant's parser would fetch: validating
    # a downloaded build must not reach the network (nabench writes the context inline).
    if not isinstance(data, dict) or not isinstance(data.get("@context"), dict):
        return [_violation("croissant_valid", "no inline JSON-LD @context object")]
    problem = mlcroissant_problem(path)
    if problem is not None:
        return [_violation("croissant_valid", problem)]
    return _distribution_violations(data, files)


# mlcroissant's verdict by the sha256 of the file's bytes: it reads the JSON-LD alone (not the
# folder around it), and takes seconds a file, which `validate`, publish's check and a build's
# own check would otherwise each pay again for the same bytes in one process.
_VERDICTS: dict[str, str | None] = {}


def mlcroissant_problem(path: Path) -> str | None:
    """mlcroissant's one-line verdict on a Croissant file (None: no error)."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"mlcroissant cannot read it: {exc}"
    if digest not in _VERDICTS:
        if len(_VERDICTS) >= 256:
            _VERDICTS.clear()
        _VERDICTS[digest] = _mlcroissant_verdict(path)
    return _VERDICTS[digest]


def _mlcroissant_verdict(path: Path) -> str | None:
    import mlcroissant as mlc

    # mlcroissant logs its warnings through absl on every load; they are not violations.
    logging.getLogger("absl").setLevel(logging.ERROR)
    try:
        mlc.Dataset(jsonld=str(path))
    except mlc.ValidationError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip().startswith("-")]
        return "mlcroissant: " + ("; ".join(lines) or str(exc).strip().splitlines()[0])
    except (ValueError, OSError) as exc:
        return f"mlcroissant cannot read it: {exc}"
    return None


def _distribution_violations(data: Any, files: Mapping[str, str]) -> list[Violation]:
    out: list[Violation] = []
    listed: dict[str, str] = {}
    for node in (data.get("distribution") or []) if isinstance(data, dict) else []:
        if isinstance(node, dict) and node.get("@type") == "cr:FileObject":
            listed[str(node.get("contentUrl"))] = str(node.get("sha256"))
    for rel, sha in sorted(listed.items()):
        if files.get(rel) != sha:
            out.append(_violation("croissant_files", f"{rel}: sha256 differs from build.json"))
    for rel in sorted(files):
        if rel.endswith(".parquet") and rel not in listed:
            out.append(_violation("croissant_files", f"{rel} is in build.json, not in croissant"))
    return out
