"""Labels: NA-applicability from a file or from an LLM following a versioned guideline."""

from __future__ import annotations

from typing import Any

from nabench.errors import NabenchError


def label_for_build(recipe: Any, options: Any) -> tuple[Any, dict[str, Any]]:
    """Label a build's items with the recipe's LLM labeler (see `nabench label`)."""
    raise NabenchError(
        f"recipe {recipe.name} labels with an LLM, which needs the labeling engine; "
        "pass --labels none or --labels PATH"
    )
