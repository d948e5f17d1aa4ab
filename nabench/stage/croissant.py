"""croissant.json: a build's Croissant metadata, core and Responsible-AI fields, via mlcroissant.

`StagingArea.commit` writes it from the same (redacted) manifest the card is rendered from and
the card's front matter, once the parquet files are hashed; build.json lists it like every
file, so `validate` and `publish` cover it. One record set per staged table, named
`<config>/<split>`; its fields and types are the table's Arrow schema (itself derived from the
row models, `schemas.derive`), each described as the row model describes it. build.json itself
is not in `distribution`: it records croissant.json's sha256, so the reverse would be a cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pydantic import BaseModel

from nabench.audit.redux import flagged_total
from nabench.schemas.derive import croissant_type, model_croissant_type
from nabench.schemas.kinds import ROW_KINDS
from nabench.schemas.manifest import Manifest
from nabench.sources import SOURCES
from nabench.stage.cards.context import labeler_lines
from nabench.validate.croissant import CROISSANT

if TYPE_CHECKING:
    import mlcroissant as mlc

    from nabench.stage.hub_layout import StagedTable

__all__ = [
    "CROISSANT",
    "CardFacts",
    "croissant_json",
    "partial_build_lines",
    "rai_fields",
    "released_croissant",
]

PARQUET = "application/x-parquet"
CONFORMS_TO = ("http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0")


@dataclass(frozen=True)
class CardFacts:
    """What a card states that the manifest does not hold as data: its limitations, and what
    the build is for (each kind's pipeline says; the cards' summaries say the same in prose)."""

    limitations: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()


def partial_build_lines(manifest: Manifest) -> list[str]:
    """The limitations of a build made from part of its source (--limit / --sample)."""
    lines = []
    if manifest.limit:
        lines.append(f"Built from the first {manifest.limit} items per split only (--limit).")
    if manifest.sample:
        lines.append(
            f"Built from a seeded sample of {manifest.sample} of the items per split that "
            "passed the eligibility audit, stratified by subject (--sample); the exclusions "
            "above are the sample's own (none from the audit)."
        )
    return lines


def croissant_json(
    tables: Sequence[StagedTable],
    manifest: Manifest,
    hashes: Mapping[str, str],
    front_matter: Mapping[str, Any],
    facts: CardFacts | None = None,
) -> bytes:
    """The bytes of croissant.json (deterministic: same build, same bytes; no dates)."""
    import mlcroissant as mlc

    recipe = manifest.recipe
    metadata = mlc.Metadata(
        name=str(recipe.get("name") or front_matter.get("pretty_name") or "nabench-build"),
        description=str(recipe.get("description") or front_matter.get("pretty_name") or ""),
        version=manifest.recipe_version,  # SemVer
        license=_as_list(front_matter.get("license")),
        cite_as=_citation(manifest),
        url=_hub_url(manifest.repo_id) if manifest.repo_id else None,
        keywords=_as_list(front_matter.get("tags")),
        in_language=_as_list(front_matter.get("language")),
        conforms_to=list(CONFORMS_TO),
        distribution=[_file_object(mlc, st, hashes) for st in tables],
        record_sets=[_record_set(mlc, st) for st in tables],
        **rai_fields(manifest, facts or CardFacts()),
    )
    text = json.dumps(metadata.to_json(), indent=2, ensure_ascii=False, default=str)
    return (text + "\n").encode("utf-8")


def released_croissant(data: bytes, repo_id: str, version: str) -> bytes:
    """croissant.json as released: the repository's URL and the release version (a
    `publish --version` may differ from the recipe's); every other byte as built."""
    metadata = json.loads(data)
    metadata["url"] = _hub_url(repo_id)
    metadata["version"] = version
    return (json.dumps(metadata, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _hub_url(repo_id: str) -> str:
    return f"https://huggingface.co/datasets/{repo_id}"


def _as_list(value: Any) -> list[str] | None:
    if value is None or value == []:
        return None
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def _citation(manifest: Manifest) -> str | None:
    dataset = None if manifest.source is None else manifest.source.dataset
    source = SOURCES.get(str(dataset))
    return None if source is None else source.citation


def _file_object(mlc: Any, st: StagedTable, hashes: Mapping[str, str]) -> mlc.FileObject:
    return mlc.FileObject(
        id=st.relpath,
        name=st.relpath,
        content_url=st.relpath,
        encoding_formats=[PARQUET],
        sha256=hashes[st.relpath],
    )


def _record_set(mlc: Any, st: StagedTable) -> mlc.RecordSet:
    rs_id = f"{st.config}/{st.split}"
    model = _row_model(st.table.schema)
    fields = [_field(mlc, st.relpath, f"{rs_id}/{c.name}", c, model) for c in st.table.schema]
    return mlc.RecordSet(
        id=rs_id,
        name=rs_id,
        description=f"config `{st.config}`, split `{st.split}`: {st.table.num_rows} rows",
        fields=fields,
    )


def _leaf_type(column: pa.Field, model: type[BaseModel] | None) -> tuple[str, bool]:
    """A column's type; an all-null column (Arrow type null: a labels file without that
    column) has the type its row model gives it, else text."""
    if not pa.types.is_null(column.type):
        return croissant_type(column.type)
    info = model.model_fields.get(column.name) if model is not None else None
    return (
        model_croissant_type(info.annotation) if info is not None else croissant_type(pa.string())
    )


def _field(
    mlc: Any, file: str, field_id: str, column: pa.Field, model: type[BaseModel] | None
) -> mlc.Field:
    """One column; a struct (or list of structs: chat messages) as sub-fields read from the
    column by JSON path (what mlcroissant's parquet reader understands, one level deep)."""
    value_type = column.type
    is_array = pa.types.is_list(value_type) or pa.types.is_large_list(value_type)
    inner = value_type.value_type if is_array else value_type
    array = {"is_array": True, "array_shape": "-1"} if is_array else {}
    info = model.model_fields.get(column.name) if model is not None else None
    description = info.description if info is not None else None
    if not pa.types.is_struct(inner):
        data_type, _ = _leaf_type(column, model)
        return mlc.Field(
            id=field_id,
            name=column.name,
            description=description,
            data_types=[data_type],
            **array,
            source=mlc.Source(file_object=file, extract=mlc.Extract(column=column.name)),
        )
    subs = []
    for member in inner:
        data_type, nested = croissant_type(member.type)
        if nested:
            raise TypeError(f"no Croissant type for {column.name}.{member.name}: {member.type}")
        source = mlc.Source(
            file_object=file,
            extract=mlc.Extract(column=column.name),
            transforms=[mlc.Transform(json_path=member.name)],
        )
        subs.append(
            mlc.Field(
                id=f"{field_id}/{member.name}",
                name=member.name,
                data_types=[data_type],
                source=source,
            )
        )
    return mlc.Field(
        id=field_id, name=column.name, description=description, sub_fields=subs, **array
    )


def _row_model(schema: pa.Schema) -> type[BaseModel] | None:
    """The row model sharing most columns with the table (its descriptions and, for an
    all-null column, its types); None if none shares any (na-train's Arrow-only tables)."""
    names = set(schema.names)
    best = max(ROW_KINDS.values(), key=lambda m: len(names & set(m.model_fields)))
    return best if names & set(best.model_fields) else None


def rai_fields(manifest: Manifest, facts: CardFacts) -> dict[str, Any]:
    """The Responsible-AI properties, each read from the manifest (or the card's facts)."""
    limitations = list(facts.limitations) or partial_build_lines(manifest)
    return {
        "data_collection": _collection(manifest),
        "data_collection_raw_data": _raw_data(manifest),
        "data_preprocessing_protocol": _preprocessing(manifest) or None,
        "data_annotation_protocol": _annotation(manifest) or None,
        "machine_annotation_tools": _models(manifest) or None,
        "data_limitations": limitations or None,
        "data_biases": _biases(manifest) or None,
        "personal_sensitive_information": [_sensitive(manifest)],
        "data_use_cases": list(facts.uses) or None,
        "data_release_maintenance_plan": (
            "Releases are immutable tagged versions (v<recipe version>); build.json records "
            "the recipe, seed and sha256 of every file, the card's changelog what changed."
        ),
    }


def _collection(manifest: Manifest) -> str:
    source = manifest.source
    if source is None:
        models = ", ".join(_models(manifest)) or "unknown"
        return f"Generated by nabench {manifest.nabench_version} with model(s) {models}."
    per_split = "; ".join(
        f"{split}: {m.rows_used} of {m.rows_read} rows read from {m.origin}"
        f" (fingerprint {m.fingerprint})"
        for split, m in source.splits.items()
    )
    return (
        f"Items of {source.dataset} read from {source.location} "
        f"(config {source.config or 'default'}, revision "
        f"{source.revision or 'unpinned'}) by nabench {manifest.nabench_version}"
        + (f"; {per_split}." if per_split else ".")
    )


def _raw_data(manifest: Manifest) -> str | None:
    source = manifest.source
    if source is None:
        return None
    revision = source.revision
    return str(source.location) + (f"@{revision}" if revision else "")


def _preprocessing(manifest: Manifest) -> list[str]:
    lines = [f"Every random choice is seeded per item from seed {manifest.seed}."]
    exclusions = manifest.exclusions
    if exclusions is not None:
        reasons = ", ".join(f"{r}: {n}" for r, n in exclusions.by_reason.items()) or "none"
        lines.append(
            f"Eligibility audit: {exclusions.total} item(s) quarantined into the "
            f"`excluded` config, by reason: {reasons}."
        )
    redux = manifest.redux
    if redux is not None:
        lines.append(
            f"MMLU-Redux audit ({redux['location']}, revision {redux.get('revision') or 'unpinned'}"
            f"): {redux['joined']} of {redux['rows']} Redux rows joined to items on subject, "
            f"question and choices, {len(redux['unmatched'])} matched none; "
            f"{flagged_total(redux)} item(s) quarantined as redux_<error_type> for "
            f"{', '.join(redux['flag'])}."
        )
    for spec in manifest.recipe.get("variants") or []:
        params = ", ".join(f"{k}={json.dumps(v)}" for k, v in spec.items() if k != "kind")
        lines.append(f"Perturbation `{spec.get('kind')}`" + (f": {params}." if params else "."))
    for name, info in (manifest.prompt_types or {}).items():
        lines.append(f"Prompt type `{name}`: {(info or {}).get('description', '')}")
    if manifest.sampling:
        lines.append(f"Sampling: {json.dumps(manifest.sampling, sort_keys=True)}.")
    if manifest.decontamination:
        lines.append(f"Decontamination: {json.dumps(manifest.decontamination, sort_keys=True)}.")
    validation = manifest.validation
    if validation is not None:
        lines.append(
            f"Validated: {validation.get('violations')} violation(s) of {validation.get('rules')}."
        )
    return lines


def _annotation(manifest: Manifest) -> list[str]:
    labels = manifest.labels
    lines = labeler_lines(labels) if labels is not None else []
    if manifest.redux:
        lines.append(
            "MMLU-Redux annotations (human re-annotation of MMLU test items) of every item "
            "joined, in the `redux` config: error_type, annotation source, correct answer."
        )
    if manifest.classifier_models:
        lines.append(
            "Verdicts classified by model(s) " + ", ".join(manifest.classifier_models) + "."
        )
    return lines


def _models(manifest: Manifest) -> list[str]:
    """Every model that wrote or labeled rows of the build, as the manifest names them."""
    labels = manifest.labels or {}
    found = [*(labels.get("models") or []), labels.get("model")]
    found += [manifest.generator_model, *(manifest.classifier_models or [])]
    found.append((manifest.model or {}).get("model_id"))
    return list(dict.fromkeys(str(m) for m in found if m))


def _biases(manifest: Manifest) -> list[str]:
    shares = manifest.letter_shares or {}
    lines = [
        f"Key letter shares {where}: "
        + ", ".join(f"{letter}={share:.1%}" for letter, share in sorted(per.items()))
        for where, per in shares.items()
    ]
    # An item build's `warnings` are its letter-share warnings (selfknow's are about its run).
    return [*lines, *(manifest.warnings or [])] if shares else lines


def _sensitive(manifest: Manifest) -> str:
    if manifest.source is not None:
        return (
            f"nabench adds no personal or sensitive information; the items are those of "
            f"{manifest.source.dataset} as published, not screened again for it."
        )
    return (
        "The rows are model-written tasks and verdicts; nabench adds no personal information "
        "and did not screen the generated text for it."
    )
