"""Fixtures of the dashboard's live tests: a headless Chromium of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.chromium import Browser


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    """A headless Chromium with a profile in the test's directory, closed after it."""
    b = Browser(tmp_path / "profile")
    yield b
    b.close()
