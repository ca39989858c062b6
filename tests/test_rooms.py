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


# Where a class may not be assembled from more than one of our own classes.
ASSEMBLED_PACKAGES = ("buildbot_revert", "simulator")


def _module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ours(tree: ast.Module, module: str, packages: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """The names in ``tree`` that are our classes, and those that are our modules.

    A class of the module itself, or one imported from a module of
    ``packages`` (absolute or relative), is ours; so is a module imported so.
    """
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    modules: set[str] = set()
    package = module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level] + [node.module or ""]).strip(".")
            source = base if node.level else node.module or ""
            if source.split(".")[0] in packages:
                classes.update(alias.asname or alias.name for alias in node.names)
                modules.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] in packages
            )
    return classes, modules


def assembled(root: Path = ROOT, packages: tuple[str, ...] = ASSEMBLED_PACKAGES) -> list[str]:
    """Every class of ``packages`` with more than one base of ours, one line each.

    A base is ours when it is a class of these packages; the standard
    library's and third parties' (Enum, NamedTuple, Protocol, Generic,
    Exception, Buildbot's services) are not, and an exception of ours with
    two of ours (an error that is both a ``HistoryError`` and a
    ``ValueError`` of ours) is an exception's hierarchy, not an assembly.
    """
    found = []
    for path in sorted(p for package in packages for p in (root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes, modules = _ours(tree, _module_name(path, root), packages)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name.endswith(("Error", "Exception")):
                continue
            bases = [ast.unparse(b) for b in node.bases if _is_ours(b, classes, modules)]
            if len(bases) > 1:
                found.append(
                    f"{path.relative_to(root)}:{node.lineno} {node.name}({', '.join(bases)})"
                )
    return found


def _is_ours(base: ast.expr, classes: set[str], modules: set[str]) -> bool:
    """Whether the base ``base`` names one of our classes (``Name`` or ``module.Name``)."""
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Name):
        return base.id in classes
    if isinstance(base, ast.Attribute):
        root = base
        while isinstance(root, ast.Attribute):
            root = root.value  # type: ignore[assignment]
        return isinstance(root, ast.Name) and root.id in modules
    return False


def test_no_class_is_assembled_from_several_of_ours() -> None:
    assert assembled() == []


def test_the_check_sees_a_class_assembled_from_two_of_ours(tmp_path: Path) -> None:
    package = tmp_path / "ours"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rows.py").write_text(
        "class Rows:\n    pass\n\n\nclass Error(Exception):\n    pass\n"
    )
    (package / "more.py").write_text("class More:\n    pass\n")
    (package / "whole.py").write_text(
        "import enum\n"
        "from typing import NamedTuple\n"
        "import ours.more\n"
        "from ours.rows import Error, Rows\n"
        "from .more import More\n"
        "class Whole(Rows, More):\n    pass\n"
        "class Dotted(Rows, ours.more.More):\n    pass\n"
        "class Single(Rows, enum.Enum):\n    pass\n"
        "class Record(NamedTuple):\n    x: int\n"
        "class RowsError(Error, Rows):\n    pass\n"
    )
    assert assembled(tmp_path, ("ours",)) == [
        "ours/whole.py:6 Whole(Rows, More)",
        "ours/whole.py:8 Dotted(Rows, ours.more.More)",
    ]
