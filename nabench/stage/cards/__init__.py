"""Dataset cards: metadata through `huggingface_hub.DatasetCardData`, body from a template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nabench.core.templates import markdown_environment
from nabench.stage.cards._release import (
    finalize_card,
    finalize_parts,
    merge_metadata,
    parse_changelog,
)
from nabench.stage.cards.front_matter import card_yaml, split_front_matter, with_front_matter

TEMPLATES = Path(__file__).parent / "templates"


def _templates() -> Any:
    return markdown_environment(TEMPLATES)


def size_category(n: int) -> str:
    """The Hub's `size_categories` bucket for n rows."""
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < limit:
            return label
    return "1M<n<10M"


def render_body(template: str, context: dict[str, Any]) -> str:
    """A card's Markdown body (everything after the front matter) from a jinja template."""
    body: str = _templates().get_template(template).render(**context)
    return body


__all__ = [
    "card_yaml",
    "finalize_card",
    "finalize_parts",
    "merge_metadata",
    "parse_changelog",
    "render_body",
    "size_category",
    "split_front_matter",
    "with_front_matter",
]
