"""A card's YAML front matter: parse it, emit it (as `huggingface_hub` would), attach it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

# libyaml's C loader and emitter when present: a card's `dataset_info` front matter has
# ~1,600 nodes and PyYAML's pure-Python emitter spends ~80 ms on it.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def split_front_matter(readme: str) -> tuple[dict[str, Any], str]:
    """(YAML metadata, body) of a README; ({}, readme) without front matter."""
    match = _FRONT.match(readme)
    if not match:
        return {}, readme
    data = yaml.load(match.group(1), Loader=_SAFE_LOADER) or {}
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
