"""One Jinja environment per template folder and process: each template compiles once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


@lru_cache(maxsize=8)
def markdown_environment(folder: Path, *, trim_blocks: bool = False) -> Any:
    """Templates of `folder` rendered as Markdown (no HTML escaping; undefined is an error)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        keep_trailing_newline=True,
        autoescape=False,  # Markdown, not HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=trim_blocks,
    )
