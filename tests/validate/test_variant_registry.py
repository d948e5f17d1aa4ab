"""Every registered variant is complete in its one file: its builder carries its recipe spec,
what the card and the audit need, and the rule records of its rows (a new variant without its
own invariants would be published with none of them checked)."""

from __future__ import annotations

import typing

import pytest
from pydantic import TypeAdapter

from nabench.perturb import BUILDERS, builders_for
from nabench.perturb.recipe import VariantSpec
from nabench.stage.cards.context import references
from nabench.validate.invariants import PERTURBED_RULES, ROW_RULES, VARIANTS


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_registered_variant_is_complete(kind: str) -> None:
    cls = BUILDERS[kind]
    assert cls.kind == kind
    assert cls.description.strip() and cls.card_text.strip()
    assert cls.inserted_reason in {None, "has_none_option", "has_all_option"}
    # its own rules, in its own file, scoped to its rows only, and all of them run
    assert cls.rules, f"no rule record applies to {kind!r} rows"
    assert all(rule.variants == (kind,) for rule in cls.rules)
    assert all(rule in ROW_RULES for rule in cls.rules)
    if cls.spec is not None:  # the recipe entry it is built from sits in the same file
        assert cls.spec.__module__ == cls.__module__
        # a recipe section: unknown keys refused, frozen
        assert cls.spec.model_config.get("extra") == "forbid"
        assert cls.spec.model_config.get("frozen") is True
    assert set(cls.cites) <= set(references()), "a cited key the bibliography lacks"
    assert kind in VARIANTS


def test_every_rule_is_a_builders_or_applies_to_every_row_or_by_a_flag() -> None:
    """No rule scoped to variants by a hand-kept list: a variant's rules are its builder's,
    the others apply to every row or to the builders that set a flag."""
    own = {rule.name for cls in BUILDERS.values() for rule in cls.rules}
    flags = {"na_exactly_once": "inserts_once", "unreplaced_unchanged": "keeps_unreplaced"}
    for rule in ROW_RULES:
        if rule.name in own or rule.variants is None:
            continue
        flag = flags[rule.name]
        assert set(rule.variants) == {k for k, b in BUILDERS.items() if getattr(b, flag)}


def test_rule_names_are_unique_and_described() -> None:
    names = [r.name for r in PERTURBED_RULES]
    assert len(names) == len(set(names))
    assert all(r.description.strip() for r in PERTURBED_RULES)
    for rule in PERTURBED_RULES:  # a rule scoped to an unknown variant would never run
        assert rule.variants is None or set(rule.variants) <= set(BUILDERS), rule.name


def _spec_kinds() -> list[str]:
    """Every variant kind a recipe may name (the recipe schema's discriminated union)."""
    union = typing.get_args(typing.get_args(VariantSpec)[0])
    return sorted(typing.get_args(s.model_fields["kind"].annotation)[0] for s in union)


@pytest.mark.parametrize("kind", _spec_kinds())
def test_every_recipe_variant_kind_reaches_its_builder(kind: str) -> None:
    """A recipe's variant becomes builders through the builder classes alone (no table of
    kinds in the pipeline): one config per NA phrasing, the first named after the kind."""
    spec = TypeAdapter(VariantSpec).validate_python({"kind": kind})
    [builder] = builders_for(spec)
    assert type(builder) is BUILDERS[kind] and builder.config_name == kind
    if "na_texts" in type(spec).model_fields:
        texts = ["None of the above", "Answer not found"]
        spec = TypeAdapter(VariantSpec).validate_python({"kind": kind, "na_texts": texts})
        built = builders_for(spec)
        assert [b.config_name for b in built] == [kind, f"{kind}__answer_not_found"]
        assert [b.inserted_texts for b in built] == [(t,) for t in texts]


def test_na_keyed_last_is_its_own_builder() -> None:
    spec = TypeAdapter(VariantSpec).validate_python({"kind": "na_keyed", "position": "last"})
    [builder] = builders_for(spec)
    assert type(builder) is BUILDERS["na_keyed_last"] and builder.config_name == "na_keyed_last"


def test_all_of_the_above_reads_its_text() -> None:
    spec = TypeAdapter(VariantSpec).validate_python({"kind": "all_of_the_above", "text": "All"})
    [builder] = builders_for(spec)
    assert builder.inserted_texts == ("All",) and builder.config_name == "all_of_the_above"
