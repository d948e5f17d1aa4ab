"""Shipped recipes (`*.yaml` beside this file) and lookup by name or path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nabench.errors import RecipeError
from nabench.schemas.recipe import read_recipe_file

RECIPE_DIR = Path(__file__).parent


def shipped_recipes() -> dict[str, Path]:
    """Name -> path of every recipe shipped with nabench."""
    return {p.stem: p for p in sorted(RECIPE_DIR.glob("*.yaml"))}


def recipe_summary(path: Path) -> str:
    """One line for `nabench list`: name, version, kind and description."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return (
        f"{data.get('name', path.stem):<22} v{data.get('version', '?'):<8} "
        f"{data.get('kind', 'na'):<10} {data.get('description', '').strip()}"
    )


def resolve_recipe_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise RecipeError(f"recipe file {name_or_path!r} does not exist")
        return path
    shipped = shipped_recipes()
    if name_or_path not in shipped:
        raise RecipeError(
            f"unknown recipe {name_or_path!r} (shipped: {', '.join(shipped)}; or pass a YAML path)"
        )
    return shipped[name_or_path]


def load_recipe(name_or_path: str) -> Any:
    """A shipped recipe by name, or a user's YAML file by path (model chosen by its `kind`)."""
    return read_recipe_file(resolve_recipe_path(name_or_path))
