"""A build compared with a rebuild from its recorded recipe, seed and options (builds are
deterministic, so any difference is a forgery or a different source).

Hashes and the card seal are unkeyed: a forger who edits rows can recompute them. What a
forger cannot recompute is the source, so `nabench validate BUILD --source LOCATION` (and
`publish`, when the recorded source is on this machine) rebuilds and compares every row.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nabench.core.bounded_read import read_parquet
from nabench.core.errors import NabenchError
from nabench.core.safe_load import UnsafeInput
from nabench.pipelines.question_inference import NEW_CONFIGS as QI_CONFIGS
from nabench.pipelines.registry import parse_recipe, run_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.schemas.manifest import Manifest
from nabench.validate.build_tree import read_manifest
from nabench.validate.invariants import Violation
from nabench.validate.kinds import config_files, infer_kind

# Kinds a rebuild needs no model for (selfknow and na-train sample an LLM).
REBUILDABLE = ("na", "artifacts")
RULE = "rebuild_matches"


def recorded_manifest(build: Path) -> Manifest:
    """build.json, read with the bounded loader (a one-line error if it cannot be)."""
    manifest, _, problems = read_manifest(build)
    if manifest is None:
        raise NabenchError(f"{build}: cannot rebuild: {problems[0].message}")
    return manifest


def local_source(manifest: Manifest) -> Path | None:
    """The recorded source location when it is a path on this machine (None: a Hub id, or a
    folder that is not here)."""
    location = manifest.location
    if not location:
        return None
    path = Path(location)
    return path if path.exists() else None


def build_source(build: Path, located: Mapping[str, str]) -> str:
    """The `--source` location meant for this build (`DATASET=LOCATION` or a bare one)."""
    source = recorded_manifest(build).source
    dataset = None if source is None else source.dataset
    location = located.get(str(dataset)) or located.get("*")
    if location is None:
        raise NabenchError(f"{build}: no --source for its dataset {dataset!r}")
    return location


def rebuild_options(build: Path, manifest: Manifest, source: str, out: Path) -> Any:
    """The BuildOptions that reproduce `build` from `source` (labels: none, or the build's
    own `labels` config when it was built with labels)."""
    kind = infer_kind(build) or manifest.kind  # what it holds, not what it says
    if kind not in REBUILDABLE:
        raise NabenchError(
            f"{build}: a {kind!r} build cannot be rebuilt without its models "
            f"(--source compares {', '.join(REBUILDABLE)} builds)"
        )
    labels = "none"
    mode = manifest.label_mode
    if mode != "none":
        files = config_files(build).get("labels") or []
        if len(files) != 1:
            raise NabenchError(
                f"{build}: built with {mode} labels and {len(files)} labels file(s): "
                "cannot rebuild (one labels file is needed)"
            )
        labels = str(files[0])
    protocol = (manifest.protocol or {}).get("name")
    return BuildOptions(
        source=source,
        out=out,
        splits=manifest.splits,
        limit=manifest.limit,
        sample=manifest.sample,
        protocol=protocol if isinstance(protocol, str) else None,
        seed=manifest.seed,
        labels=labels,
        progress=False,
        rebuild=True,
    )


def compare_with_rebuild(build: Path, source: str) -> list[Violation]:
    """Every difference between `build` and a rebuild from `source`, per config file and id."""
    manifest = recorded_manifest(build)
    recipe = parse_recipe(manifest.recipe, f"{build}/build.json recipe")
    with tempfile.TemporaryDirectory(prefix="nabench-rebuild-") as tmp:
        out = Path(tmp) / "rebuild"
        run_recipe(recipe, rebuild_options(build, manifest, source, out))
        rebuilt = recorded_manifest(out)
        found = _source_differences(manifest, rebuilt)
        found += _tree_differences(build, out, model_configs(manifest))
    return _audit_version_note(manifest, rebuilt) + found if found else found


def _audit_version_note(manifest: Manifest, rebuilt: Manifest) -> list[Violation]:
    """A build audited by other option patterns than this nabench's: its exclusions may differ
    from a rebuild's because the audit changed, not the build, and the report says so first."""
    mine = (manifest.audit_patterns or {}).get("version")
    theirs = (rebuilt.audit_patterns or {}).get("version")
    if mine == theirs:
        return []
    return [
        Violation(
            "build.json",
            -1,
            "-",
            "audit_patterns",
            f"built with audit patterns version {mine}, this nabench audits with version "
            f"{theirs}: the differences below may be the audit's (see the versions' notes in "
            "nabench/audit/option_patterns.yaml), not a forgery",
        )
    ]


def model_configs(manifest: Manifest) -> frozenset[str]:
    """Configs a model made after the build (question inference): a rebuild cannot make
    them, so they are left out of the comparison rather than reported as added."""
    return frozenset(QI_CONFIGS) if manifest.question_inference else frozenset()


def _source_differences(manifest: Manifest, rebuilt: Manifest) -> list[Violation]:
    out = []
    mine = manifest.source.splits if manifest.source else {}
    theirs = rebuilt.source.splits if rebuilt.source else {}
    for split, record in theirs.items():
        recorded = mine[split].fingerprint if split in mine else None
        if recorded != record.fingerprint:
            out.append(
                Violation(
                    "build.json",
                    -1,
                    "-",
                    "source_fingerprint",
                    f"split {split}: the source's fingerprint differs from the recorded one "
                    "(another source, or another revision of it)",
                )
            )
    return out


def _tree_differences(build: Path, rebuilt: Path, skip: frozenset[str]) -> list[Violation]:
    mine = {rel: p for rel, p in _data_files(build).items() if rel.split("/", 1)[0] not in skip}
    theirs = _data_files(rebuilt)
    out = [
        Violation(rel, -1, "-", RULE, "not in the rebuild (a config the recipe does not make)")
        for rel in sorted(set(mine) - set(theirs))
    ]
    out += [
        Violation(rel, -1, "-", RULE, "missing: the rebuild has this config file")
        for rel in sorted(set(theirs) - set(mine))
    ]
    for rel in sorted(set(mine) & set(theirs)):
        out += _row_differences(rel, mine[rel], theirs[rel])
    return out


def _data_files(root: Path) -> dict[str, Path]:
    return {
        p.relative_to(root).as_posix(): p for paths in config_files(root).values() for p in paths
    }


def _row_differences(rel: str, mine: Path, theirs: Path) -> list[Violation]:
    """Rows of `mine` that differ from the rebuilt rows of the same id (fields named), and
    ids only one side has."""
    try:
        a = read_parquet(mine)  # the build under test: bounded before decoding
    except (OSError, pa.ArrowException, UnsafeInput) as exc:
        return [Violation(rel, -1, "-", RULE, f"unreadable ({type(exc).__name__})")]
    b = pq.read_table(theirs)
    if a.schema.equals(b.schema) and a.equals(b):
        return []
    if "id" not in a.column_names:
        return [Violation(rel, -1, "-", RULE, "differs from the rebuild (no id column)")]
    expected = {str(r.get("id")): r for r in b.to_pylist()}
    out: list[Violation] = []
    seen: set[str] = set()
    for i, row in enumerate(a.to_pylist()):
        item_id = str(row.get("id"))
        seen.add(item_id)
        want = expected.get(item_id)
        if want is None:
            out.append(Violation(rel, i, item_id, RULE, "id not in the rebuild"))
            continue
        fields = sorted(k for k in {*row, *want} if row.get(k) != want.get(k))
        if fields:
            out.append(
                Violation(rel, i, item_id, RULE, f"{', '.join(fields)} differ(s) from the rebuild")
            )
    for item_id in sorted(set(expected) - seen):
        out.append(Violation(rel, -1, item_id, RULE, "id missing (the rebuild has it)"))
    return out
