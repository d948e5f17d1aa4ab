"""The package layers (pyproject's import-linter contract) and the import rules around them.

The contract is checked by the real `lint-imports`; the rules it cannot express (no nabench
import inside a function, no private module of another package, no cycle inside a package)
are checked here on the real import graph that grimp (import-linter's engine) builds.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "nabench"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_layers_contract_is_kept() -> None:
    run = _lint_imports(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "upward"),
    [
        ("core/errors.py", "import nabench.cli"),
        ("perturb/original.py", "from nabench.pipelines import skeleton"),
        ("label/labeler.py", "import nabench.selfknow.taxonomy"),  # siblings on one layer
    ],
)
def test_contract_catches_an_upward_import(tmp_path: Path, module: str, upward: str) -> None:
    shutil.copytree(PACKAGE, tmp_path / "nabench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "nabench" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{upward}  # noqa\n", "utf-8")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "BROKEN" in run.stdout
    importer = "nabench." + module.removesuffix(".py").replace("/", ".")
    assert importer in run.stdout


def _python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [node.module or ""] if node.level == 0 else ["(relative)"]


def test_no_nabench_import_inside_a_function() -> None:
    found = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = _imported_modules(node)
                    if any(n.startswith("nabench") or n == "(relative)" for n in names):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} {names}")
    assert found == []


def _is_module(dotted: str) -> bool:
    relative = Path(*dotted.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative).is_dir()


def test_no_private_module_of_another_package_is_imported() -> None:
    found = []
    for path in _python_files():
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = [t for t in _imported_modules(node) if t.startswith("nabench")]
            if isinstance(node, ast.ImportFrom) and node.level == 0 and targets:
                targets += [f"{node.module}.{a.name}" for a in node.names]
            for target in filter(_is_module, targets):
                parts = target.split(".")
                private = [i for i, part in enumerate(parts) if part.startswith("_")]
                if private and private[0] != 0:
                    owner = ".".join(parts[: private[0]])  # the package holding the private module
                    if not importer.startswith(owner + ".") and importer != owner:
                        found.append(f"{importer} imports {target}")
    assert found == []


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("nabench", exclude_type_checking_imports=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.find_modules_directly_imported_by(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []
