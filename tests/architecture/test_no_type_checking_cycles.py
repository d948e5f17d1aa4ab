"""No evaluation module imports a nabench module only for type checking: there such an
import hid a cycle (the report writers imported `Report` from the module that imports
them). Third-party imports (matplotlib types) may stay behind TYPE_CHECKING; the CLI keeps
its lazy ones (startup time), which are no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

NABENCH = Path(__file__).resolve().parents[2] / "nabench"
EVALUATION = NABENCH / "evaluation"


def _type_checking_imports(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    found.append(stmt.module)
                elif isinstance(stmt, ast.Import):
                    found += [a.name for a in stmt.names]
    return found


def test_no_nabench_import_behind_type_checking_in_evaluation() -> None:
    offenders = {
        str(path.relative_to(NABENCH)): mods
        for path in sorted(EVALUATION.rglob("*.py"))
        if (
            mods := [
                m
                for m in _type_checking_imports(ast.parse(path.read_text()))
                if m.startswith("nabench")
            ]
        )
    }
    assert offenders == {}
