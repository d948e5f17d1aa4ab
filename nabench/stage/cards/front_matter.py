"""A card's YAML front matter: parse it, emit it (as `huggingface_hub` would), attach it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from nabench.core.safe_load import load_yaml

# libyaml's C emitter when present: a card's `dataset_info` front matter has ~1,600 nodes
# and PyYAML's pure-Python emitter spends ~80 ms on it.
_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def split_front_matter(readme: str, where: str = "README.md") -> tuple[dict[str, Any], str]:
    """(YAML metadata, body) of a README; ({}, readme) without front matter.

    Parsed within `safe_load`'s limits: a card nabench did not write (the target's previous
    card, merged into the new one) may hold an alias bomb, which would be carried into the
    release; it is refused in one line naming `where`, as is a key given twice."""
    match = _FRONT.match(readme)
    if not match:
        return {}, readme
    data = load_yaml(match.group(1), f"{where} front matter") or {}
    return (data if isinstance(data, dict) else {}), readme[match.end() :]


def card_yaml(metadata: Mapping[str, Any]) -> str:
    """Front-matter YAML for card metadata, normalised by `huggingface_hub.DatasetCardData`.

    Same text as `DatasetCardData.to_yaml()` (which is `yaml.dump(..., allow_unicode=True,
    sort_keys=False)`), emitted by libyaml.
    """
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(**metadata).to_dict()
    text: str = yaml.dump(data, Dumper=_SAFE_DUMPER, allow_unicode=True, sort_keys=False)
    return text.strip()


def with_front_matter(metadata: Mapping[str, Any], body: str) -> str:
    """README text: `---`, the metadata as YAML, `---`, then the body."""
    return f"---\n{card_yaml(metadata)}\n---\n{body}"
