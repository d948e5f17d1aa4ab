"""The builder contract: a frozen dataclass of parameters with a `config_name` and a `build`,
and, as class attributes, everything else about its variant (card text, draws, the audit
reason of what it inserts, the rules its rows obey), so a variant is one file."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import pyarrow as pa
from pydantic import AfterValidator, BaseModel, Field

from nabench.core.rng import Draw
from nabench.perturb.rules import Rule
from nabench.schemas.columns import ItemColumns

DEFAULT_NA_TEXT = "None of the above"
# The NA phrasings the NA study uses (the shipped recipes' `na_texts`).
KNOWN_NA_TEXTS = (
    DEFAULT_NA_TEXT,
    "Answer not found",
    "No valid options",
    "None of the options given is correct",
)


@dataclass(frozen=True)
class Builder(ABC):
    """One perturbation. `kind` is the registry key; `config_name` names the output config."""

    kind: ClassVar[str]
    description: ClassVar[str]
    # The recipe entry (`variants: [{kind: ...}]`) it is built from, a pydantic model whose
    # `kind` is this kind; None for a builder another kind's spec asks for (`na_keyed_last`).
    spec: ClassVar[type[BaseModel] | None]
    # The per-item draws `build` makes, stated on the card (none: the builder is deterministic).
    draws: ClassVar[tuple[Draw, ...]] = ()
    card_text: ClassVar[str]  # the card's "why" of the variant's config
    # The audit reason its inserted text is flagged for (items already holding one of
    # `inserted_texts` are ineligible for that reason); None where it inserts no phrasing.
    inserted_reason: ClassVar[str | None] = "has_none_option"
    # The references the card cites for it (keys of `stage/cards/citations.yaml`).
    cites: ClassVar[tuple[str, ...]] = ()
    # The invariants of this variant's rows (scoped to `kind`); the rules of every row, and
    # the two below that several variants share, are `validate.invariants`'.
    rules: ClassVar[tuple[Rule, ...]]
    # Its rows hold the inserted text exactly once (`na_exactly_once`).
    inserts_once: ClassVar[bool] = True
    # It replaces the option at `replaced_index` and keeps every other (`unreplaced_unchanged`).
    keeps_unreplaced: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, spec: Any) -> list[Builder]:
        """The builders (one per output config) a recipe's variant spec of this kind asks
        for; a builder with no parameters makes one."""
        return [cls()]

    @property
    @abstractmethod
    def config_name(self) -> str: ...

    @property
    def why(self) -> str:
        """The card's text for this builder's config (`card_text`, naming its own text)."""
        return self.card_text.format(text=getattr(self, "text", ""))

    @property
    def inserted_texts(self) -> tuple[str, ...]:
        """Texts this builder inserts (the audit refuses items that already hold them)."""
        return ()

    @abstractmethod
    def build(self, items: ItemColumns, seed: int) -> pa.Table:
        """Perturbed rows for every (eligible) item, in input order."""


def _inserted_text(text: str) -> str:
    # an option a model reads and a config is named after: no blank, no padding to strip
    if text != text.strip() or not any(ch.isalnum() for ch in text):
        raise ValueError(
            f"{text!r} is not an option text (it needs a letter or digit and no leading or "
            "trailing space)"
        )
    return text


def _distinct_phrasings(texts: list[str]) -> list[str]:
    slugs = [slug(t) for t in texts]
    repeated = [t for t, s in zip(texts, slugs, strict=True) if slugs.count(s) > 1]
    if repeated:
        raise ValueError(f"na_texts repeat a phrasing (one config each): {repeated}")
    return texts


# A text a builder inserts as an option.
InsertedText = Annotated[str, AfterValidator(_inserted_text)]
# A spec's `na_texts`: the NA phrasings, one config each (distinct up to case and punctuation).
NATexts = Annotated[list[InsertedText], AfterValidator(_distinct_phrasings), Field(min_length=1)]


def na_texts_field() -> list[str]:
    """The default of a spec's `na_texts`: "None of the above" alone."""
    return Field(default_factory=lambda: [DEFAULT_NA_TEXT])  # type: ignore[no-any-return]


def slug(text: str) -> str:
    """`None of the options given is correct` -> `none_of_the_options_given_is_correct`."""
    out = "".join(ch.lower() if ch.isalnum() else "_" for ch in text.strip())
    return "_".join(part for part in out.split("_") if part)


def phrasing_config(kind: str, na_text: str, first: bool) -> str:
    """Config name for a phrasing: the first keeps the kind, others get `kind__<slug>`."""
    return kind if first else f"{kind}__{slug(na_text)}"


@dataclass(frozen=True)
class InsertsText(Builder):
    """A builder that inserts one text (`text`; the published column is still `na_text`);
    `name` overrides the config name (extra NA phrasings, e.g. `na_keyed__answer_not_found`)."""

    text: str = DEFAULT_NA_TEXT
    name: str | None = None

    @classmethod
    def from_spec(cls, spec: Any) -> list[Builder]:
        """One builder per NA phrasing in `spec.na_texts`, each its own config."""
        return [
            cls(text=t, name=phrasing_config(cls.kind, t, i == 0))
            for i, t in enumerate(spec.na_texts)
        ]

    @property
    def config_name(self) -> str:
        return self.name or self.kind

    @property
    def inserted_texts(self) -> tuple[str, ...]:
        return (self.text,)
