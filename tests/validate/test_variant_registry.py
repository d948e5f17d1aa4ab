"""Every registered variant is complete: its builder carries what the card and the audit
need, and at least one rule record applies to its rows only (a new variant without its own
invariants would be published with none of them checked)."""

from __future__ import annotations

import pytest

from nabench.perturb import BUILDERS
from nabench.validate.invariants import PERTURBED_RULES, VARIANTS


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_registered_variant_is_complete(kind: str) -> None:
    cls = BUILDERS[kind]
    assert cls.kind == kind
    assert cls.description.strip() and cls.card_text.strip()
    assert cls.inserted_reason in {"has_none_option", "has_all_option"}
    own = [r.name for r in PERTURBED_RULES if r.variants is not None and kind in r.variants]
    assert own, f"no rule record applies to {kind!r} rows"
    assert kind in VARIANTS


def test_rule_names_are_unique_and_described() -> None:
    names = [r.name for r in PERTURBED_RULES]
    assert len(names) == len(set(names))
    assert all(r.description.strip() for r in PERTURBED_RULES)
    for rule in PERTURBED_RULES:  # a rule scoped to an unknown variant would never run
        assert rule.variants is None or set(rule.variants) <= set(BUILDERS), rule.name
