"""The decision core must not do I/O or read a clock: both shells share it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import buildbot_revert.core

CORE_DIR = Path(buildbot_revert.core.__file__).parent
FORBIDDEN = {
    "twisted",
    "buildbot",
    "treq",
    "sqlite3",
    "sqlite_utils",
    "sqlalchemy",
    "http",
    "urllib",
    "requests",
    "socket",
    "time",
    "datetime",
    "asyncio",
    "github",
    "os",
    "subprocess",
}
# Pure string functions inside a forbidden package: URL parsing does no I/O.
ALLOWED = {"urllib.parse"}


def core_modules() -> list[Path]:
    return sorted(CORE_DIR.rglob("*.py"))


def dotted(path: Path) -> str:
    """The module name of a file under the core (a package's is its own)."""
    parts = path.relative_to(CORE_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("buildbot_revert.core", *parts))


def test_the_core_imports_nothing_impure() -> None:
    assert len(core_modules()) >= 4
    for path in core_modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name not in ALLOWED:
                    assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"


def test_importing_the_core_loads_no_io_library() -> None:
    mods = ", ".join(dotted(p) for p in core_modules())
    code = (
        f"import sys, {mods}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'twisted', 'buildbot', 'treq', 'sqlite3', 'sqlite_utils', 'http', 'urllib3'})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
