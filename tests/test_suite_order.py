"""The table of slow modules that orders the run (tests/conftest.py) names modules that exist."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOW_MODULES

ROOT = Path(__file__).resolve().parents[1]


def test_every_slow_module_named_to_run_first_exists() -> None:
    missing = [name for name in SLOW_MODULES if not (ROOT / name).is_file()]
    assert missing == []
