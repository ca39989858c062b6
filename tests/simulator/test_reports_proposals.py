"""What every report says of a proposal (the files its change touched, how long ago the builder
was last green), of the builders it covers, and of a verdict the simulator cannot lift."""

from __future__ import annotations

import json
import re

import pytest

from buildbot_revert.core.model import Builder, Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.verdicts import (
    BuildRef,
    PullRequestEvidence,
    Reason,
    RevertRequest,
    Streak,
    Verdict,
)
from simulator.analysis.replay import ReplayResult, Selection
from simulator.reports.html import render_html
from simulator.reports.markdown import render_markdown
from simulator.reports.model import ReportContext, age_text, files_text
from simulator.reports.schemas import REPORT
from simulator.reports.text import render_blind_spots_text, render_text, to_json
from tests.test_report_schema import _errors

T0 = 1_704_067_200.0  # 2024-01-01
HOUR = 3600.0
DAY = 86400.0
FILES = ("Lib/ssl.py", "Modules/_ssl.c", "Lib/test/test_ssl.py", "Misc/NEWS.d/next/x.rst")


def _result(policy: Policy | None = None, selection: Selection | None = None) -> ReplayResult:
    """Two builders: one proposes a change with four files, after a green build 30 h before
    its first failure; the other's streak is declined as ``stale-green``."""
    change = Change("c" * 40, "someone", "gh-1: Fix ssl | <b>", T0, 7, "", FILES)
    docs = Change("d" * 40, "other", "gh-2: docs", T0, None, "", ())
    request = RevertRequest(change, "A", 5, (5, 6, 7), T0 + 40 * HOUR, last_green_at=T0 - 18 * HOUR)
    revert = Verdict(
        "A", 5, Reason.REVERT, "3 failing builds", T0 + 40 * HOUR, change, request,
        started_at=T0 + 12 * HOUR,
    )  # fmt: skip
    stale = Verdict(
        "B", 9, Reason.STALE_GREEN, "the builder was last green 20 days ago", T0 + 5 * DAY, docs,
        started_at=T0 + 3 * DAY,
    )  # fmt: skip
    result = ReplayResult(
        policy or Policy(),
        selection or Selection(since=T0),
        builds=20,
        builders=[Builder("A", ("stable",)), Builder("B", ("unstable",))],
        first_build_at=T0,
        last_build_at=T0 + 10 * DAY,
    )
    result.verdicts += [revert, stale]
    result.streaks += [
        Streak("A", 5, T0 + 12 * HOUR, T0 + 2 * DAY, 3, (change,), revert),
        Streak("B", 9, T0 + 3 * DAY, None, 4, (docs,), stale),
    ]
    return result


def test_the_json_gives_each_revert_its_files_and_the_age_of_the_last_green_build() -> None:
    doc = to_json(ReportContext.of_replay(_result()))
    (revert,) = doc["reverts"]
    assert revert["files"] == list(FILES)
    assert revert["last_green_age_hours"] == 30.0
    assert doc["policy"]["tolerated_tags"] == ["unstable"]
    assert doc["policy"]["stale_green_after_hours"] == 168.0


def test_an_unknown_last_green_build_is_null_and_unknown() -> None:
    result = _result()
    verdict = result.verdicts[0]
    assert verdict.request is not None
    result.verdicts[0] = verdict._replace(request=verdict.request._replace(last_green_at=None))
    ctx = ReportContext.of_replay(result)
    assert to_json(ctx)["reverts"][0]["last_green_age_hours"] is None
    assert "| unknown |" in render_markdown(ctx)


def test_the_markdown_proposal_table_names_files_and_last_green() -> None:
    md = render_markdown(ReportContext.of_replay(_result()))
    (row,) = [line for line in md.splitlines() if line.startswith("| 2024-01-02 |")]
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    header = next(line for line in md.splitlines() if line.startswith("| filed |"))
    names = [c.strip() for c in header.split("|")[1:-1]]
    assert len(cells) == len(names)
    by_name = dict(zip(names, cells, strict=True))
    assert by_name["files"] == "Lib/ssl.py, Modules/\\_ssl.c, Lib/test/test\\_ssl.py +1 more"
    assert by_name["last green"] == "30 h"


def test_the_html_proposal_table_names_files_and_last_green() -> None:
    page = render_html(ReportContext.of_replay(_result()))
    table = page.split("<table id=proposals>", 1)[1].split("</table>", 1)[0]
    assert "<th>files</th><th class=n>last green</th>" in table
    assert "<td>Lib/ssl.py, Modules/_ssl.c, Lib/test/test_ssl.py +1 more</td>" in table
    assert "<td class=n>30 h</td>" in table


def test_the_text_report_names_files_and_last_green() -> None:
    out = render_text(ReportContext.of_replay(_result()))
    assert "files: Lib/ssl.py, Modules/_ssl.c, Lib/test/test_ssl.py +1 more; last green 30 h" in out


def test_a_stale_green_streak_would_need_a_verification_build() -> None:
    ctx = ReportContext.of_replay(_result())
    md = render_markdown(ctx)
    blind = md.split("## Blind spots", 1)[1]
    assert "| `stale-green` (would need a verification build) | 1 | 1 | 168 |" in blind
    assert "`stale-green` (would need a verification build): the builder was last green" in blind
    page = render_html(ctx)
    assert "<code>stale-green</code> (would need a verification build)" in page
    text = render_blind_spots_text(ctx)
    assert "stale-green" in text and "(would need a verification build)" in text


def test_the_selection_line_says_which_builders_are_tolerated() -> None:
    ctx = ReportContext.of_replay(_result())
    line = (
        "Builders: 2 (all of the history); tolerated, never proposing alone: those tagged "
        "unstable (1)."
    )
    assert line in render_markdown(ctx)
    assert f"<p id=selection>{line}</p>" in render_html(ctx)
    assert line in render_text(ctx)
    chosen = Selection(
        since=T0,
        builders=re.compile("^A"),
        tags=frozenset({"stable"}),
        exclude_tags=frozenset({"PullRequest"}),
        names=frozenset({"A", "B"}),
    )
    ctx = ReportContext.of_replay(_result(Policy(tolerated_tags=frozenset()), chosen))
    assert ctx.selection_line == (
        "Builders: 2 (names matching ^A, 2 listed by name, tagged stable, not tagged "
        "PullRequest); none tolerated."
    )


@pytest.mark.parametrize(
    ("files", "shown"),
    [
        ((), "unknown"),
        (("Doc/a.rst",), "Doc/a.rst"),
        (("a", "b", "c"), "a, b, c"),
        (("a", "b", "c", "d", "e"), "a, b, c +2 more"),
    ],
)
def test_files_text(files: tuple[str, ...], shown: str) -> None:
    assert files_text(files) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "unknown"),
        (600.0, "under 1 h"),
        (5 * HOUR, "5 h"),
        (47 * HOUR, "47 h"),
        (21 * DAY, "21 days"),
    ],
)
def test_age_text(seconds: float | None, shown: str) -> None:
    assert age_text(seconds) == shown


def _with_pull_request() -> tuple[ReplayResult, PullRequestEvidence]:
    """The proposal of ``_result``, its change's own pull request #7 having failed the same."""
    result = _result()
    pull = PullRequestEvidence(
        pull_request=7,
        failed=(BuildRef(builder="A PR", number=12),),
        passed=(BuildRef(builder="A PR <i>", number=13),),
        ties=True,
    )
    revert = result.verdicts[0]._replace(pull_request=pull)
    result.verdicts[0] = revert
    result.streaks[0] = result.streaks[0]._replace(verdict=revert)
    return result, pull


def test_every_format_names_what_the_changes_own_pull_request_builds_showed() -> None:
    result, pull = _with_pull_request()
    ctx = ReportContext.of_replay(result)
    doc = to_json(ctx)
    expected = {
        "pull_request": 7,
        "failed": [{"builder": "A PR", "number": 12}],
        "passed": [{"builder": "A PR <i>", "number": 13}],
        "ties": True,
        "sentence": pull.sentence(),
    }
    assert doc["reverts"][0]["pull_request_builds"] == expected
    assert doc["streaks"][0]["pull_request_builds"] == expected
    # Only where the builds showed something: the declined streak has none.
    assert "pull_request_builds" not in doc["streaks"][1]
    assert _errors(REPORT, json.loads(json.dumps(doc))) == []
    sentence = "its pull request #7 failed the same test cases before it was merged (A PR build 12)"
    assert sentence in render_text(ctx)
    assert sentence in render_markdown(ctx)
    html = render_html(ctx)
    assert sentence in html
    assert "A PR &lt;i&gt; build 13" in html and "<i>" not in html.split("<body>")[1]


def test_without_pull_request_evidence_the_reports_say_nothing_of_it() -> None:
    ctx = ReportContext.of_replay(_result())
    assert "pull_request_builds" not in to_json(ctx)["reverts"][0]
    assert to_json(ctx)["policy"]["pull_request_builds"] is True
    assert "own pull requests' builds" not in render_markdown(ctx)
    assert "its pull request #" not in render_text(ctx)
    off = to_json(ReportContext.of_replay(_result(Policy(pull_request_builds=False))))
    assert off["policy"]["pull_request_builds"] is False
