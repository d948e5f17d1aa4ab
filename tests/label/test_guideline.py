from __future__ import annotations

from pathlib import Path

import jsonschema

from nabench.label.guideline import GUIDELINE_DIR, load_guideline


def test_shipped_guideline_has_rules_examples_and_hashed_version() -> None:
    g = load_guideline("na_applicability")
    assert {
        "definitive_answer",
        "precise_knowledge",
        "factual_verification",
        "mutually_exclusive",
        "subjective",
        "approximate",
    } <= set(g.rule_ids)
    assert len(g.examples) == 5
    assert {e.na_applicable for e in g.examples} == {True, False}
    assert all(e.rule is None or e.rule in g.rule_ids for e in g.examples)
    assert g.version.startswith("1.0.0+") and len(g.version) == len("1.0.0+") + 8
    jsonschema.Draft202012Validator.check_schema(g.output_schema())
    prompt = g.system_prompt()
    for ex in g.examples:
        assert ex.question in prompt


def test_any_text_change_changes_the_version(tmp_path: Path) -> None:
    text = (GUIDELINE_DIR / "na_applicability.md").read_text()
    same = tmp_path / "same.md"
    edited = tmp_path / "edited.md"
    same.write_text(text)
    edited.write_text(text.replace("Decide whether", "Judge whether"))
    assert load_guideline(str(same)).version == load_guideline("na_applicability").version
    assert load_guideline(str(edited)).version != load_guideline("na_applicability").version
    assert load_guideline(str(edited)).declared_version == "1.0.0"
