"""No function in nabench is longer than 80 lines (issue 15): a longer one is doing more
than one thing. Rule tables are data at module level, so they are not functions here."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "nabench"
MAX_LINES = 80


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(
                        f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines})"
                    )
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    assert long_functions(PACKAGE) == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n\ndef g():\n    return 1\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:1 f ({MAX_LINES + 1})"]
