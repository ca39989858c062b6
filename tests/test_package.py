"""The package has one version, and the changelog says what it changed.

``__version__`` in ``buildbot_revert/__init__.py`` is the only place the
version is written: setup.py reads it, so the installed metadata (what
``simulate --version`` prints) must be the same, and CHANGELOG.md must have
a section for it.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import buildbot_revert

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_version_is_the_packages() -> None:
    assert importlib.metadata.version("buildbot-revert") == buildbot_revert.__version__


def test_setup_py_writes_no_version_of_its_own() -> None:
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert not re.search(r"version\s*=\s*['\"]", setup)


def test_the_changelog_has_a_section_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)", changelog, re.MULTILINE)
    assert headings[0] == buildbot_revert.__version__
