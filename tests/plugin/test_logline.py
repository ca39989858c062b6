"""Every line the plugin writes to the master's log goes through one gate (``logline.say``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from twisted.python import log

from buildbot_revert import logline
from buildbot_revert.logline import LINE_LIMIT, say

PACKAGE = Path(logline.__file__).parent
# C0 (with \n and \t), DEL, C1, and the bidi embeddings, overrides and isolates.
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def written() -> Any:
    """This test's messages written to Twisted's log (others, e.g. warnings, may pass by)."""
    lines: list[str] = []

    def hear(event: dict[str, Any]) -> None:
        text = " ".join(str(m) for m in event.get("message", ()))
        if text.startswith("buildbot-revert: test-logline"):
            lines.append(text)

    log.addObserver(hear)
    yield lines
    log.removeObserver(hear)


def test_a_line_shows_escapes_escaped_and_cannot_forge_a_second_line(written):
    say("buildbot-revert: test-logline \x1b]52;c;cGF3bmVk\x07 \u202eevil\nbuildbot-revert: forged")

    [line] = written
    assert not UNPRINTABLE.search(line)
    assert "\\x1b]52;c;cGF3bmVk\\x07" in line and "\\u202e" in line
    assert "\\nbuildbot-revert: forged" in line


def test_a_line_however_long_is_cut_and_says_so(written):
    say("buildbot-revert: test-logline " + "x" * 5_000_000)

    [line] = written
    assert len(line) <= LINE_LIMIT
    assert line.endswith("characters)") and "(cut: " in line


def test_no_module_of_the_plugin_writes_to_the_log_but_through_say():
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != Path(logline.__file__)
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\blog\.msg\b|\bmsg\(", text) and "def " not in text
    ]
    assert offenders == []
