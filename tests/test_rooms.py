"""Rooms: no module over 800 lines, no function over 60, in the code people read.

The limits ``docs/development.md`` states for the project's code, checked
here so that a change cannot quietly grow a module or a function past them.
A function counts from its ``def`` to its last line, docstring included.
A module holds one responsibility; above about 800 lines, look again
(issue 45: a class keeps one larger module rather than being cut into
mixins over several to meet a smaller number).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("buildbot_revert", "simulator", "benchmarks", "testkit")
MODULE_LINES = 800
FUNCTION_LINES = 60


def too_long(path: Path, root: Path = ROOT) -> list[str]:
    """What in ``path`` is over the limits, one line each (empty: nothing)."""
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(root)
    found = []
    lines = text.count("\n")
    if lines > MODULE_LINES:
        found.append(f"{where}: {lines} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_or_function_is_over_its_limit(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert len(modules) > 10, f"{package}'s modules are where this test looks"
    assert [line for path in modules for line in too_long(path)] == []


def test_the_check_sees_a_long_function_and_a_long_module(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINES))
    long = tmp_path / "long.py"
    long.write_text('"""A module."""\n\n\ndef f() -> None:\n' + body + "\n" * MODULE_LINES)
    assert too_long(long, tmp_path) == [
        f"long.py: {MODULE_LINES + FUNCTION_LINES + 4} lines",
        f"long.py:4 f: {FUNCTION_LINES + 1} lines",
    ]
    fits = tmp_path / "fits.py"
    fits.write_text('"""A module."""\n\n\ndef f() -> None:\n' + body[: body.rindex("    x")])
    assert too_long(fits, tmp_path) == []
