"""Recipe kinds (kind -> recipe model + pipeline) and the shipped recipes, by name or path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from nabench.core.errors import RecipeError
from nabench.core.safe_load import ParseLimits, UnsafeInput, load_yaml, load_yaml_file
from nabench.perturb.recipe import NATrainRecipe, Recipe
from nabench.pipelines.artifacts import build_artifacts
from nabench.pipelines.na import build as build_na
from nabench.pipelines.na_train import build_na_train
from nabench.pipelines.selfknow import build_selfknow
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.schemas.artifacts_recipe import ArtifactsRecipe
from nabench.schemas.recipe import format_validation_error
from nabench.selfknow.recipe import SelfKnowRecipe

RECIPE_DIR = Path(__file__).parents[1] / "recipes"


# A recipe is a few dozen lines: anything near these caps is an attack or a mistake.
RECIPE_LIMITS = ParseLimits(max_bytes=256 * 2**10, max_nodes=20_000, max_depth=32)


def shipped_recipes() -> dict[str, Path]:
    """Name -> path of every recipe shipped with nabench."""
    return {p.stem: p for p in sorted(RECIPE_DIR.glob("*.yaml"))}


def recipe_summary(path: Path) -> str:
    """One line for `nabench list`: name, version, kind and description."""
    data = load_yaml_file(path, RECIPE_LIMITS) or {}
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


def load_recipe(name_or_path: str, overrides: Sequence[str] = ()) -> Any:
    """A shipped recipe by name, or a user's YAML file by path (model chosen by its `kind`),
    with `KEY=VALUE` overrides (dotted keys, YAML values) applied before validation."""
    return read_recipe_file(resolve_recipe_path(name_or_path), overrides)


def apply_overrides(data: Any, overrides: Sequence[str], origin: str) -> Any:
    """`sampler.n=2` sets data["sampler"]["n"] = 2 (the value is read as YAML)."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise RecipeError(f"override {item!r}: expected KEY=VALUE (e.g. sampler.n=2)")
        *parents, leaf = key.strip().split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                raise RecipeError(f"{origin}: override {key!r}: {part!r} is not a mapping")
        if not isinstance(node, dict):
            raise RecipeError(f"{origin}: override {key!r}: the recipe is not a mapping")
        try:  # the same bounded loader as recipe files
            node[leaf] = load_yaml(raw, f"--set {key}", RECIPE_LIMITS)
        except UnsafeInput as exc:
            raise RecipeError(f"override {item!r}: {exc}") from None
    return data


@dataclass(frozen=True)
class RecipeKind:
    """One recipe kind: the pydantic model its YAML is validated with, and its pipeline."""

    model: type[BaseModel]
    build: Callable[[Any, BuildOptions], BuildResult]


# The one registry of recipe kinds; the recipe models' `kind` Literals must match its keys.
KINDS: dict[str, RecipeKind] = {
    "na": RecipeKind(Recipe, build_na),
    "artifacts": RecipeKind(ArtifactsRecipe, build_artifacts),
    "selfknow": RecipeKind(SelfKnowRecipe, build_selfknow),
    "na-train": RecipeKind(NATrainRecipe, build_na_train),
}


def recipe_model(kind: str) -> type[BaseModel]:
    if kind not in KINDS:
        raise RecipeError(f"unknown recipe kind {kind!r} (known: {', '.join(KINDS)})")
    return KINDS[kind].model


def run_recipe(recipe: Any, options: BuildOptions) -> BuildResult:
    """Build any recipe with the pipeline registered for its kind."""
    return KINDS[recipe.kind].build(recipe, options)


def parse_recipe(data: Any, origin: str) -> Any:
    """Validate a recipe mapping with the model of its `kind` (default `na`)."""
    if not isinstance(data, dict):
        raise RecipeError(f"{origin}: a recipe must be a YAML mapping")
    model = recipe_model(str(data.get("kind", "na")))
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RecipeError(format_validation_error(exc, origin)) from None


def read_recipe_file(path: Path, overrides: Sequence[str] = ()) -> Any:
    try:  # bounded: alias bombs, deep nesting, huge files and bad UTF-8 are one-line errors
        data = load_yaml_file(path, RECIPE_LIMITS)
    except UnsafeInput as exc:
        raise RecipeError(f"recipe {exc}") from None
    if overrides:
        data = apply_overrides(data, overrides, str(path))
    return parse_recipe(data, str(path))
