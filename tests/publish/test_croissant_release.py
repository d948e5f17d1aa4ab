"""A release's croissant.json names the repository and the released version (a `--version`
may differ from the recipe's), and the released tree still validates."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from publish_helpers import build_mmlu

from nabench.publish.git import publish_to_git
from nabench.validate import validate_path
from nabench.validate.croissant import mlcroissant_problem


def test_release_pins_url_and_version(tmp_path: Path, mmlu_dir: Path) -> None:
    staged = tmp_path / "build"
    build_mmlu(mmlu_dir, staged, version="1.0.0", limit=30)
    built = json.loads((staged / "croissant.json").read_text())
    # as built: the recipe's publish.repo_id and version
    assert built["version"] == "1.0.0"
    assert built["url"] == "https://huggingface.co/datasets/nabench/mmlu-na"
    repo = tmp_path / "repo"
    publish_to_git(staged, repo, "org/mmlu-na", version="1.2.3")
    tree = tmp_path / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "v1.2.3"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    released = json.loads((tree / "croissant.json").read_text())
    assert released["url"] == "https://huggingface.co/datasets/org/mmlu-na"
    assert released["version"] == "1.2.3"
    assert {k: v for k, v in released.items() if k not in {"url", "version"}} == {
        k: v for k, v in built.items() if k not in {"url", "version"}
    }
    assert mlcroissant_problem(tree / "croissant.json") is None
    assert validate_path(tree).violations == []
