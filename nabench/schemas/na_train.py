"""The sections of a recipe of kind `na-train` (the recipe is `perturb.recipe.NATrainRecipe`)
and the rows it writes: the NA study's fine-tuning data (§5.5 of Tam et al.), in TRL's
conversational dataset formats.

A build samples `sampling.n` chain-of-thought answers per variant of every training question
(standard = `original`, `na_keyed`, `na_distractor`), keeps a variant's sample set only when it
holds a right and a wrong answer, and writes `sft` (`messages`), `dpo` (`prompt` / `chosen` /
`rejected`), `samples` (every sample) and `discarded` (the sets that were all right or all
wrong).
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import Field

from nabench.schemas.model import ModelSpec
from nabench.schemas.recipe import _Spec


class SamplerSpec(ModelSpec):
    """The model that answers (a `ModelSpec`) and how it samples."""

    n: int = Field(
        default=8,
        ge=2,
        le=128,
        description="Samples per variant of a question (at least 2: a set is kept only when "
        "it holds a right and a wrong answer, which one sample never does).",
    )
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1)
    chunk_size: int = Field(
        default=32, ge=1, description="Requests per cache commit (a kill loses at most one)."
    )


class SFTSpec(_Spec):
    """SFT keeps the first correct sample of each kept set of these variants."""

    variants: list[str] = Field(default_factory=lambda: ["original"], min_length=1)


class DPOSpec(_Spec):
    """DPO pairs correct (chosen) with incorrect (rejected) samples of each kept set.

    `zip`: the i-th correct with the i-th incorrect sample in sample order, min(#correct,
    #incorrect) pairs, no sample used twice. `product`: every correct with every incorrect.
    """

    variants: list[str] = Field(
        default_factory=lambda: ["original", "na_keyed", "na_distractor"], min_length=1
    )
    pairing: Literal["zip", "product"] = "zip"


class DecontaminationSpec(_Spec):
    """Evaluation splits no training question may come from (exact or normalised match)."""

    splits: list[str] = Field(default_factory=lambda: ["test"])
    location: str | None = Field(
        default=None, description="Where to read them; default: the build's source location."
    )
    config: str | None = None


class LicenceSpec(_Spec):
    """Licence of the generating model's outputs (null: the card asks the user to fill it)."""

    outputs: str | None = None


_STR = pa.string()
_I64 = pa.int64()
MESSAGE = pa.struct([("role", _STR), ("content", _STR)])
MESSAGES = pa.list_(MESSAGE)

SAMPLES_ARROW = pa.schema(
    [
        ("id", _STR),
        ("source", _STR),
        ("subject", _STR),
        ("variant", _STR),
        ("question", _STR),
        ("choices", pa.list_(_STR)),
        ("answer", _I64),
        ("gold", _STR),
        ("replaced_index", _I64),
        ("na_text", _STR),
        ("sample_index", _I64),
        ("seed", _I64),
        ("prompt", _STR),
        ("response", _STR),
        ("finish_reason", _STR),
        ("parsed", _STR),
        ("correct", pa.bool_()),
        ("model", _STR),
        ("na_applicable", pa.bool_()),
        ("labeler", _STR),
        ("guideline_version", _STR),
    ]
)
SFT_ARROW = pa.schema(
    [
        ("messages", MESSAGES),
        ("id", _STR),
        ("variant", _STR),
        ("gold", _STR),
        ("sample_index", _I64),
        ("seed", _I64),
    ]
)
DPO_ARROW = pa.schema(
    [
        ("prompt", MESSAGES),
        ("chosen", MESSAGES),
        ("rejected", MESSAGES),
        ("id", _STR),
        ("variant", _STR),
        ("gold", _STR),
        ("chosen_sample_index", _I64),
        ("chosen_seed", _I64),
        ("chosen_parsed", _STR),
        ("rejected_sample_index", _I64),
        ("rejected_seed", _I64),
        ("rejected_parsed", _STR),
    ]
)
DISCARDED_ARROW = pa.schema(
    [
        ("id", _STR),
        ("variant", _STR),
        ("reason", _STR),
        ("n_samples", _I64),
        ("n_correct", _I64),
        ("seeds", pa.list_(_I64)),
    ]
)
