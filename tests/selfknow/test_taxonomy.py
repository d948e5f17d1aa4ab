from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nabench.core.errors import NabenchError
from nabench.selfknow import load_taxonomy, normalise_reason, reason_to_type
from nabench.selfknow.taxonomy import Taxonomy

# Spellings used in the released Line of Duty CSVs.
CSV_REASONS = {
    "Insufficient Domain Expertise": "functional_capability",
    "Computational Complexity Exceeded": "functional_capability",
    "Illogical or Ill-formed": "functional_capability",
    "Missing Context": "contextual_awareness",
    "Incoherent Context": "contextual_awareness",
    "Vague/Open-Ended": "identification_of_ambiguity",
    "No scientific consensus": "identification_of_ambiguity",
    "Malicious Intent": "ethical_integrity",
    "Offensive Topics": "ethical_integrity",
    "Abstract temporal setting": "temporal_perception",
    "Outside Training Cutoff": "temporal_perception",
}
CSV_TYPES = {
    "Functional Ceiling": "functional_capability",
    "Contextual Awareness": "contextual_awareness",
    "Identification of Ambiguity": "identification_of_ambiguity",
    "Ethical Integrity": "ethical_integrity",
    "Temporal Perception": "temporal_perception",
}


def test_bundled_taxonomy_shape() -> None:
    taxonomy = load_taxonomy()
    assert isinstance(taxonomy.version, str) and taxonomy.version
    assert [t.id for t in taxonomy.types] == list(dict.fromkeys(CSV_TYPES.values()))
    assert len(taxonomy.reasons) == 11
    assert [len(t.reasons) for t in taxonomy.types] == [3, 2, 2, 2, 2]
    for sk_type in taxonomy.types:
        assert sk_type.description and sk_type.near_boundary_feasible and sk_type.name
        for reason in sk_type.reasons:
            assert reason.type_id == sk_type.id
            assert reason.description and reason.name


@pytest.mark.parametrize(("text", "type_id"), sorted(CSV_REASONS.items()))
def test_csv_reason_spellings_resolve(text: str, type_id: str) -> None:
    sk_type = reason_to_type(text)
    assert sk_type is not None and sk_type.id == type_id


@pytest.mark.parametrize(("text", "type_id"), sorted(CSV_TYPES.items()))
def test_csv_type_spellings_resolve(text: str, type_id: str) -> None:
    found = load_taxonomy().find_type(text)
    assert found is not None and found.id == type_id


@pytest.mark.parametrize(
    "alias", ["Capability Boundary", "functional ceiling", "FUNCTIONAL-capability"]
)
def test_functional_capability_aliases(alias: str) -> None:
    found = load_taxonomy().find_type(alias)
    assert found is not None and found.id == "functional_capability"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Vague/Open-Ended ", "vague open ended"),
        ("Illogical or Ill-formed", "illogical or ill formed"),
        ("OUTSIDE\ttraining   cut-off!", "outside training cut off"),
        ("", ""),
        (None, ""),
        (float("nan"), ""),
    ],
)
def test_normalise_reason(text: object, expected: str) -> None:
    assert normalise_reason(text) == expected


def test_reason_lookup_ignores_case_whitespace_punctuation() -> None:
    taxonomy = load_taxonomy()
    for text in ["vague / open ended", "VAGUE-OPEN-ENDED", " Vague   open_ended. "]:
        reason = taxonomy.find_reason(text)
        assert reason is not None and reason.id == "vague_open_ended"


@pytest.mark.parametrize("text", ["Lack of tools", "", "   ", None])
def test_unknown_reason_is_none_not_error(text: object) -> None:
    assert reason_to_type(text) is None
    assert load_taxonomy().find_reason(text) is None


def test_custom_taxonomy_file(tmp_path: Path) -> None:
    data = {
        "version": "test-1",
        "types": [
            {
                "id": "t1",
                "name": "Type one",
                "description": "d",
                "near_boundary_feasible": "nb",
                "reasons": [{"id": "r1", "name": "Reason one", "description": "d"}],
            }
        ],
    }
    path = tmp_path / "tax.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    taxonomy = load_taxonomy(path)
    assert isinstance(taxonomy, Taxonomy) and taxonomy.version == "test-1"
    assert reason_to_type("reason ONE", taxonomy) == taxonomy.types[0]
    assert reason_to_type("Malicious Intent", taxonomy) is None


def test_taxonomy_rejects_ambiguous_alias(tmp_path: Path) -> None:
    reason = {"id": "r1", "name": "Same", "description": "d"}
    other = {"id": "r2", "name": "Other", "aliases": ["same"], "description": "d"}
    data = {
        "version": "x",
        "types": [
            {
                "id": "t1",
                "name": "T",
                "description": "d",
                "near_boundary_feasible": "nb",
                "reasons": [reason, other],
            }
        ],
    }
    path = tmp_path / "tax.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(NabenchError, match="used by both"):
        load_taxonomy(path)


@pytest.mark.parametrize(
    "content",
    ["version: '1'\n", "types: []\n", "version: '1'\ntypes:\n  - id: t\n    name: T\n"],
)
def test_taxonomy_malformed(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tax.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(NabenchError):
        load_taxonomy(path)


def test_taxonomy_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NabenchError, match="cannot read taxonomy"):
        load_taxonomy(tmp_path / "absent.yaml")
