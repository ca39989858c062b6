"""A history someone hands over drives no terminal, pings no one, and hides nothing in a report.

Its builder names, authors and titles carry what an attacker would put
there: OSC 52 (write the clipboard), OSC 0 (set the terminal's title), CSI
sequences (erase the line, colour), an 8-bit CSI (``\\x9b``), bidi overrides,
and mentions after a backtick or a non-ASCII letter.
"""

from __future__ import annotations

import json
import re

from buildbot_revert.core.model import Builder, Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.verdicts import Reason, RevertRequest, Streak, Verdict
from simulator.analysis.replay import ReplayResult, Selection
from simulator.reports.markdown import render_markdown
from simulator.reports.model import ReportContext
from simulator.reports.render import render_report
from simulator.reports.text import render_blind_spots_text, render_text
from tests.core.test_untrusted import BIDI_AND_CONTROLS, MENTION, TERMINAL, rendered

T0 = 1_704_067_200.0  # 2024-01-01
HOUR = 3600.0
BUILDER = "AMD64 \x1b]0;owned\x07Ubuntu\x1b[2K"
AUTHOR = "mallory\x1b]52;c;cm0gLXJmIH4=\x07 `@octocat"
TITLE = "gh-1: \u202etxt.exe\u202c \x9b31m Café@python/core-team \x1b[1A"
RED_BUILDER = "s390x \x1b[31mRHEL\u2066"


def hostile_result() -> ReplayResult:
    """One proposal whose builder, author and title are hostile, and a builder red at the end."""
    change = Change("c" * 40, AUTHOR, TITLE, T0, 7, "", ("Lib/\x1b[8mhidden.py",))
    request = RevertRequest(change, BUILDER, 5, (5, 6, 7), T0 + 40 * HOUR, last_green_at=T0)
    revert = Verdict(
        BUILDER, 5, Reason.REVERT, "3 failing builds", T0 + 40 * HOUR, change, request,
        started_at=T0 + 12 * HOUR,
    )  # fmt: skip
    red = Verdict(
        RED_BUILDER, 9, Reason.MULTIPLE_CHANGES, "2 changes \x1b[0m", T0 + 50 * HOUR, None,
        started_at=T0 + 45 * HOUR,
    )  # fmt: skip
    result = ReplayResult(
        Policy(),
        Selection(since=T0),
        builds=20,
        builders=[Builder(BUILDER, ("stable",)), Builder(RED_BUILDER, ("stable",))],
        first_build_at=T0,
        last_build_at=T0 + 3 * 86400,
    )
    result.verdicts += [revert, red]
    result.streaks += [
        Streak(BUILDER, 5, T0 + 12 * HOUR, T0 + 2 * 86400, 3, (change,), revert),
        Streak(RED_BUILDER, 9, T0 + 45 * HOUR, None, 4, (change, change), red),
    ]
    return result


def test_the_text_report_shows_control_and_bidi_characters_escaped():
    ctx = ReportContext.of_replay(hostile_result())
    for out in (render_text(ctx), render_blind_spots_text(ctx), render_report(ctx, "text")):
        assert not TERMINAL.search(out), out
    text = render_text(ctx)
    # Shown, not obeyed: the reader sees what the history holds.
    assert "mallory\\x1b]52;c;cm0gLXJmIH4=\\x07 `@octocat" in text
    assert "AMD64 \\x1b]0;owned\\x07Ubuntu\\x1b[2K #5" in text
    assert "\\u202etxt.exe\\u202c \\x9b31m" in text
    assert "s390x \\x1b[31mRHEL\\u2066" in render_blind_spots_text(ctx)


def test_the_json_report_holds_no_control_or_bidi_character():
    doc = render_report(ReportContext.of_replay(hostile_result()), "json")
    assert not re.search(r"\\u00[01][0-9a-f]|\\u00[89][0-9a-f]|\\u202[a-e]|\\u206[6-9]", doc)
    [revert] = json.loads(doc)["reverts"]
    assert revert["author"] == "mallory]52;c;cm0gLXJmIH4= `@octocat"
    assert not BIDI_AND_CONTROLS.search(json.dumps(revert, ensure_ascii=False))


def test_the_markdown_report_pings_no_one():
    md = render_markdown(ReportContext.of_replay(hostile_result()))
    assert not MENTION.search(rendered(md))
    assert not BIDI_AND_CONTROLS.search(md)
