"""`nabench export lm-eval`: write a build's lm-eval tasks for a local folder or a Hub id.

A local build's tasks read its parquet files by absolute path; a Hub build's read the repo
at a revision: ``--revision``, or the release tag the repo's own published tasks read (its
latest release; ``publish --version`` may tag it apart from the recipe version).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nabench.core.errors import NabenchError, first_line
from nabench.core.out_guard import OutKind, OutLock, check_folder, check_parents, remove_stale
from nabench.core.portable import hub_miss_note, require_location
from nabench.core.safe_load import UnsafeInput, load_yaml_file
from nabench.schemas.manifest import MANIFEST, read_manifest_file
from nabench.stage.exports.lm_eval_tasks import (
    GEN_TEMPLATE,
    LM_EVAL_DIR,
    TEMPLATE,
    DataSource,
    HubData,
    LmEvalSpec,
    LocalData,
    lm_eval_files,
)
from nabench.stage.hub_layout import swap_into_place

__all__ = ["Exported", "export_lm_eval", "resolve_lm_eval_source"]


def _hub_file(repo_id: str, name: str, revision: str | None) -> Path:
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id, name, repo_type="dataset", revision=revision))
    except Exception as exc:
        first = first_line(exc)
        note = hub_miss_note(repo_id)
        where = f"{name} of {repo_id!r} at {revision or 'main'}"
        raise NabenchError(f"cannot read {where}: {first}{note}") from None


def _release_tag(repo_id: str, spec: LmEvalSpec) -> str:
    """The revision the repo's own tasks read: `publish` pins them to the release's tag."""
    name = f"{LM_EVAL_DIR}/{spec.task(spec.configs[0][0])}.yaml"
    try:  # a downloaded file: the bounded reader every other YAML input goes through
        task = load_yaml_file(_hub_file(repo_id, name, None))
    except UnsafeInput:
        task = None
    kwargs = task.get("dataset_kwargs") if isinstance(task, dict) else None
    tag = kwargs.get("revision") if isinstance(kwargs, dict) else None
    if not isinstance(tag, str) or not tag:
        raise NabenchError(f"{repo_id}: {name} names no release revision; pass --revision")
    return tag


def resolve_lm_eval_source(
    build: str | Path, revision: str | None = None
) -> tuple[LmEvalSpec, DataSource]:
    """The task spec and data location of a built folder or a Hub dataset id."""
    path = Path(build).expanduser()  # as `require_location` reads it
    if path.is_dir():
        if revision:
            raise NabenchError("--revision applies to a Hub id, not a local build folder")
        if not (path / MANIFEST).is_file():
            raise NabenchError(f"{path}: no {MANIFEST} (not a nabench build folder)")
        return LmEvalSpec.from_manifest(read_manifest_file(path / MANIFEST)), LocalData(
            path.resolve()
        )
    require_location(str(build), folder=True)
    spec = LmEvalSpec.from_manifest(read_manifest_file(_hub_file(str(build), MANIFEST, revision)))
    return spec, HubData(str(build), revision or _release_tag(str(build), spec))


@dataclass(frozen=True)
class Exported:
    spec: LmEvalSpec
    source: DataSource
    files: tuple[Path, ...]


def _is_task_file(rel: str, path: Path) -> bool:
    """A file an earlier export wrote: one of its two templates, or a top-level task or
    group YAML with the `nabench_build` metadata each of them carries (a user's own task
    that includes or lists nabench tasks names nabench too, and is kept)."""
    if "/" in rel or not rel.endswith(("yaml", "yml")):
        return False
    if rel in (TEMPLATE, GEN_TEMPLATE):
        return True
    try:
        return b"\n  nabench_build: " in path.read_bytes()[:65536]
    except OSError:
        return False


EXPORT = OutKind("an lm-eval export (nabench task YAMLs)", _is_task_file)


def export_lm_eval(build: str | Path, out: Path, revision: str | None = None) -> Exported:
    """Write the tasks into ``out`` (replaced as a whole, atomically): only a new or empty
    folder or an earlier export, never the build itself, a folder around it or a link."""
    spec, source = resolve_lm_eval_source(build, revision)
    files = lm_eval_files(spec, source)
    out = Path(out).expanduser().absolute()
    local = [("the build", source.root)] if isinstance(source, LocalData) else []
    check_parents(out)  # before the folder above it is made
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = OutLock(out)
    lock.acquire()
    try:
        remove_stale(out)  # first: an interrupted swap's earlier export is put back
        check_folder(out, EXPORT, local)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        tmp.chmod(0o755)
        try:
            for rel, data in files.items():
                (tmp / Path(rel).name).write_bytes(data)  # flat: the folder is --include_path
            swap_into_place(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        lock.release()
    return Exported(spec, source, tuple(out / Path(rel).name for rel in files))
