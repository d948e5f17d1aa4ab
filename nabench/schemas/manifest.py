"""build.json as a model: what every build kind writes, typed, and read back the one bounded way.

A record keeps the order its keys were given in, so a manifest written from a model is
byte-for-byte the JSON of the mapping it was built from, and a manifest read and re-staged
(question inference, publish) keeps its layout. Keys the model does not name (a kind's own
sections: `fewshot` details, selfknow `generation`, na-train `decontamination` ...) are kept as
they are, after the named ones only if they were given after them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from nabench.core.errors import NabenchError
from nabench.core.safe_load import decode_utf8, load_json

MANIFEST = "build.json"


class ManifestError(NabenchError):
    """A build.json that is not a nabench manifest (one line, naming the file)."""


class Record(BaseModel):
    """A JSON object of build.json: named fields typed, other keys kept, key order kept."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, Mapping) and isinstance(model, Record):
            model._order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        first = {k: out[k] for k in self._order if k in out}
        return {**first, **{k: v for k, v in out.items() if k not in first}}

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_") and name not in self._order:
            self._order = (*self._order, name)  # a key set later goes last, as in a dict

    def record(self) -> dict[str, Any]:
        """The JSON object: the keys given (or set), in their order."""
        return self.model_dump(mode="json", exclude_unset=True)


class SplitRecord(Record):
    """`source.splits[split]`: where a split came from, rows read and used."""

    origin: str | None = None
    fingerprint: str | None = None
    files: Any = None
    rows_read: int | None = None
    rows_used: int | None = None


class SourceRecord(Record):
    """`source`: which dataset, where it was read from, and per split what."""

    dataset: str | None = None
    location: str | None = None
    config: str | None = None
    revision: str | None = None
    splits: dict[str, SplitRecord] = {}


class Exclusions(Record):
    total: int = 0
    by_reason: dict[str, int] = {}
    by_reason_subject: dict[str, dict[str, int]] = {}


class Manifest(Record):
    """build.json. The header (`nabench_version` ... `seed`) and `files` are every kind's; the
    rest are what the item builds (na, artifacts), na-train and selfknow write; a build of an
    earlier version may lack any of them, so readers see None / empty for a missing one."""

    nabench_version: str | None = None
    python: str | None = None
    kind: str | None = None
    recipe: dict[str, Any] = {}
    seed: int | None = None
    splits: list[str] | None = None
    limit: int | None = None
    sample: int | None = None
    protocol: dict[str, Any] | None = None
    text: str | None = None  # artifacts: how the source text was shown
    source: SourceRecord | None = None
    fewshot: dict[str, Any] | None = None  # artifacts
    prompt_types: dict[str, dict[str, Any]] | None = None  # artifacts
    counts: dict[str, dict[str, int]] = {}
    exclusions: Exclusions | None = None
    audit_patterns: dict[str, Any] | None = None  # na
    letter_shares: dict[str, dict[str, float]] | None = None  # na
    warnings: list[str] | None = None
    validation: dict[str, Any] | None = None
    labels: dict[str, Any] | None = None  # na
    redux: dict[str, Any] | None = None  # na with audit.redux
    question_inference: dict[str, Any] | None = None  # artifacts, after infer-questions
    model: dict[str, Any] | None = None  # na-train: the sampling model
    sampling: dict[str, Any] | None = None  # na-train
    decontamination: dict[str, Any] | None = None  # na-train
    generator_model: str | None = None  # selfknow
    classifier_models: list[str] | None = None  # selfknow
    files: dict[str, str] = {}  # {relative path: sha256}, written by stage
    lm_eval: dict[str, Any] | None = None  # the lm-eval tasks stage wrote

    @property
    def recipe_name(self) -> str | None:
        name = self.recipe.get("name")
        return name if isinstance(name, str) else None

    @property
    def recipe_version(self) -> str | None:
        version = self.recipe.get("version")
        return None if version is None else str(version)

    @property
    def repo_id(self) -> str | None:
        """The recipe's `publish.repo_id` (None when it names none)."""
        publish = self.recipe.get("publish")
        repo = publish.get("repo_id") if isinstance(publish, Mapping) else None
        return repo if isinstance(repo, str) and repo else None

    @property
    def location(self) -> str | None:
        """Where the source was read from, as recorded (`local:<name>`, a path or a Hub id)."""
        return None if self.source is None else self.source.location

    @property
    def label_mode(self) -> str:
        mode = (self.labels or {}).get("mode", "none")
        return str(mode)

    def to_bytes(self) -> bytes:
        """build.json's bytes (the one way it is written)."""
        return (json.dumps(self.record(), indent=2, sort_keys=False, default=str) + "\n").encode(
            "utf-8"
        )


def parse_manifest(data: Any, where: str) -> Manifest:
    """A manifest from parsed JSON; a one-line error naming `where` if it is not one."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{where}: not a JSON object")
    try:
        return Manifest.model_validate(data, strict=True)  # "seed": true is not seed 1
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ManifestError(f"{where}: {loc}: {first['msg']}") from None


def manifest_from_bytes(raw: bytes, where: str = MANIFEST) -> Manifest:
    """build.json's bytes read with the bounded loader (size, nesting, integers), as a model."""
    return parse_manifest(load_json(decode_utf8(raw, where), where), where)


def previous_manifest(text: str | None, where: str) -> Manifest | None:
    """The manifest of an earlier release (None when there is none or it is not readable:
    the changelog then starts afresh rather than trusting a broken record)."""
    if not text:
        return None
    try:
        return manifest_from_bytes(text.encode("utf-8"), where)
    except NabenchError:
        return None


def read_manifest_file(path: Path) -> Manifest:
    """A build.json on disk (a one-line error if it is missing, hostile or not a manifest)."""
    if not path.is_file():
        raise ManifestError(f"{path.parent}: no {MANIFEST} (not a nabench build folder)")
    return manifest_from_bytes(path.read_bytes(), str(path))


__all__ = [
    "MANIFEST",
    "Exclusions",
    "Manifest",
    "ManifestError",
    "Record",
    "SourceRecord",
    "SplitRecord",
    "manifest_from_bytes",
    "parse_manifest",
    "previous_manifest",
    "read_manifest_file",
]
