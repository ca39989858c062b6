"""The repository stands alone: no tracked file reads anything outside it.

A user, a packager or a contributor only ever has a clone.  A path into a
sibling directory, an environment variable pointing at one, or an absolute
path of the machine a file was written on works on that machine and nowhere
else, so the tracked files are searched for each.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Spelled in pieces so that this file does not find itself.
FORBIDDEN = re.compile(
    "|".join(
        [
            re.escape("../" + "shared"),
            re.escape("BUILDBOT_REVERT_" + "SHARED"),
            # The development machines' layout: the workplace, root's home,
            # the local package mirror.
            r"(?<![\w.])/" + r"work/",
            r"(?<![\w.])/" + r"root/",
            r"(?<![\w.])/" + r"opt/pypi",
        ]
    )
)


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: nothing says which files are tracked")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_reaches_outside_the_repository() -> None:
    found = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary, or deleted in the work tree
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "references outside the repository:\n" + "\n".join(found)


def test_the_pattern_finds_what_it_is_meant_to() -> None:
    for line in [
        "beside = REPO_ROOT.parent / '..' / 'shared'".replace(
            "'..' / 'shared'", "'../" + "shared'"
        ),
        "os.environ['BUILDBOT_REVERT_" + "SHARED']",
        "see /" + "work/shared/calibration.md",
        "cd /" + "root/x",
    ]:
        assert FORBIDDEN.search(line), line
    for line in ["docs/calibration.md", "https://example.org/work/x", "~/.cache/x", "a/root/b"]:
        assert not FORBIDDEN.search(line), line
