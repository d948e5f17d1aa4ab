"""README's mmlu-na recipe and loading examples show the shipped recipe's version."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_readme_examples_use_the_shipped_mmlu_na_version() -> None:
    shipped = yaml.safe_load((REPO / "nabench/recipes/mmlu-na.yaml").read_text("utf-8"))
    version = str(shipped["version"])
    readme = (REPO / "README.md").read_text("utf-8")
    recipe = re.search(
        r"name: mmlu-na\nversion: (\S+) +# semver; the release tag is v(\S+)", readme
    )
    assert recipe and recipe.groups() == (version, version)
    loads = re.findall(r'load_dataset\("org/mmlu-na", [^)]*revision="v([^"]+)"\)', readme)
    assert loads and set(loads) == {version}
