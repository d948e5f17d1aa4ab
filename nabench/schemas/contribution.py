"""The header of a contributed perturbation: `contributions/<name>/contribution.yaml`.

A contribution folder holds this header, one or more JSONL/parquet files of `PerturbedItem`
rows, and `tests.json` golden pairs (input item -> expected output row) that CI checks
exactly, in the NL-Augmenter style. `nabench validate contributions/` checks all of it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

# Hub licence identifiers a contribution may use (the release inherits the source's licence,
# so a contribution must be at least as permissive as the data it perturbs).
Licence = Literal[
    "mit",
    "apache-2.0",
    "bsd-2-clause",
    "bsd-3-clause",
    "cc0-1.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
]

SafeFileName = Annotated[
    StrictStr,
    Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        description="A plain file name inside the contribution folder (no '/', no '..').",
    ),
]


class ContributionSource(BaseModel):
    """The source split the contributed rows perturb (their ids trace back to it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: Literal["mmlu", "arc_challenge", "hellaswag", "gpqa"]
    config: StrictStr | None = Field(default=None, description="Source config [the loader's].")
    split: StrictStr = Field(description="Source split, e.g. test.")


class ContributionHeader(BaseModel):
    """`contribution.yaml`: who contributes what, under which licence, built how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{1,63}$", description="Equals the folder name."
    )
    author: StrictStr = Field(min_length=1, description="Name and contact of the contributor.")
    licence: Licence = Field(description="Licence of the contributed rows (Hub identifier).")
    description: StrictStr = Field(min_length=10, description="What the perturbation does, why.")
    source: ContributionSource
    data: list[SafeFileName] = Field(
        min_length=1, description="Row files (.jsonl or .parquet) in this folder, each once."
    )

    @field_validator("data")
    @classmethod
    def _each_file_once(cls, files: list[str]) -> list[str]:
        # A file listed twice was read twice: its rows counted and published twice.
        twice = sorted({f for f in files if files.count(f) > 1})
        if twice:
            raise ValueError(f"lists {', '.join(twice)} more than once")
        return files

    tests: SafeFileName = Field(default="tests.json", description="Golden pairs file.")
    parameters: dict[StrictStr, Any] = Field(
        default_factory=dict,
        description=(
            "Perturbation parameters. With `builder` (a nabench builder kind), `na_text` and "
            "`seed`, every golden pair is re-run through that builder and must match exactly."
        ),
    )
