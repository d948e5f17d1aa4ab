"""Labeling guidelines as versioned data (`nabench/guidelines/<name>.md`, YAML front matter).

The effective version is the declared semver plus a hash of the whole file, so any edit to
the text changes the version and therefore every cache key built from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from nabench.core.errors import NabenchError
from nabench.core.safe_load import load_yaml, read_text

GUIDELINE_DIR = Path(__file__).resolve().parents[1] / "guidelines"


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Example:
    question: str
    choices: tuple[str, ...]
    na_applicable: bool
    rule: str | None
    rationale: str


@dataclass(frozen=True)
class Guideline:
    name: str
    declared_version: str
    content_sha256: str
    instructions: str
    rules: tuple[Rule, ...]
    examples: tuple[Example, ...]

    @property
    def version(self) -> str:
        """`<semver>+<8 hex of the file's sha256>`: changes whenever the text changes."""
        return f"{self.declared_version}+{self.content_sha256[:8]}"

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules)

    def output_schema(self) -> dict[str, Any]:
        """JSON schema the labeler asks the model to follow."""
        return {
            "type": "object",
            "properties": {
                "na_applicable": {"type": "boolean"},
                "rule": {"type": "string", "enum": [*self.rule_ids, "none"]},
                "rationale": {"type": "string", "maxLength": 300},
            },
            "required": ["na_applicable", "rule", "rationale"],
            "additionalProperties": False,
        }

    def contradiction(self, value: Any) -> str | None:
        """Why a schema-valid label contradicts itself, or None: an applicable item names
        no failing rule (``"none"``), a not-applicable one names the rule that fails."""
        applicable, rule = value.get("na_applicable"), value.get("rule")
        if applicable is True and rule != "none":
            return f"contradiction: na_applicable true with the not-applicable rule {rule!r}"
        if applicable is False and rule == "none":
            return "contradiction: na_applicable false with rule 'none'"
        return None

    def system_prompt(self) -> str:
        """Instructions + rules + worked examples: the prefix shared by every prompt."""
        lines = [self.instructions.strip(), "", "Rules:"]
        lines += [f"- {r.id} ({r.title}): {r.text}" for r in self.rules]
        lines += ["", "Worked examples:"]
        for ex in self.examples:
            answer = {
                "na_applicable": ex.na_applicable,
                "rule": ex.rule or "none",
                "rationale": ex.rationale,
            }
            lines += ["", format_item(ex.question, ex.choices), json.dumps(answer)]
        return "\n".join(lines)


def format_item(question: str, choices: tuple[str, ...] | list[str]) -> str:
    """The item as shown to the labeler."""
    options = "\n".join(f"({chr(65 + i)}) {c}" for i, c in enumerate(choices))
    return f"Question: {question.strip()}\nChoices:\n{options}"


@cache
def load_guideline(name_or_path: str = "na_applicability") -> Guideline:
    """A shipped guideline by name, or a guideline file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = GUIDELINE_DIR / f"{name_or_path}.md"
    if not path.is_file():
        raise NabenchError(f"guideline {name_or_path!r} not found ({path})")
    text = read_text(path)
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise NabenchError(f"{path}: a guideline needs YAML front matter between '---' lines")
    front, body = text[4:].split("\n---\n", 1)
    meta = load_yaml(front, f"{path} front matter") or {}
    try:
        rules = tuple(Rule(r["id"], r["title"], r["text"]) for r in meta["rules"])
        examples = tuple(
            Example(
                e["question"],
                tuple(e["choices"]),
                bool(e["na_applicable"]),
                e.get("rule"),
                e["rationale"],
            )
            for e in meta["examples"]
        )
        return Guideline(
            name=meta["name"],
            declared_version=str(meta["version"]),
            content_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            instructions=body,
            rules=rules,
            examples=examples,
        )
    except (KeyError, TypeError) as exc:
        raise NabenchError(f"{path}: malformed guideline front matter ({exc})") from None
