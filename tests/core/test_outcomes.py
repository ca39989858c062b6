"""The follow-up rules of a revert PR: stand down, human touches, its builds, relands."""

from __future__ import annotations

from buildbot_revert.core.follow_up_text import SUMMARY_MARKER, stand_down_comment, summary_comment
from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.model import Change, Result
from buildbot_revert.core.outcomes import (
    FollowStep,
    Outcome,
    RevertBuild,
    RevertPull,
    StandDown,
    counterpart,
    follow_up,
    is_reland,
    pull_number_of_branch,
    stand_down_at,
    summarise,
    touched_by_human,
)

OPEN = RevertPull("open", merged=False, touched=False)


def test_stands_down_when_every_qualified_builder_went_green():
    assert stand_down_at(100.0, [Qualified(90.0, 150.0), Qualified(95.0, 130.0)]) == 150.0


def test_a_builder_still_red_keeps_the_revert():
    assert stand_down_at(100.0, [Qualified(90.0, 150.0), Qualified(95.0, None)]) is None


def test_a_green_build_after_now_is_not_known_yet():
    assert stand_down_at(100.0, [Qualified(90.0, 150.0)], now=120.0) is None
    assert stand_down_at(100.0, [Qualified(90.0, 150.0)], now=150.0) == 150.0


def test_green_before_filing_stands_down_at_filing():
    assert stand_down_at(100.0, [Qualified(90.0, 95.0)]) == 100.0


def test_a_builder_that_qualifies_after_the_stand_down_changes_nothing():
    later_red = Qualified(500.0, None)
    assert stand_down_at(100.0, [Qualified(90.0, 150.0), later_red]) == 150.0
    # ...but one that qualified while another was still red joins.
    assert stand_down_at(100.0, [Qualified(90.0, 150.0), Qualified(140.0, None)]) is None


def test_no_qualified_builder_means_no_stand_down():
    assert stand_down_at(100.0, []) is None


def test_merged_and_closed_are_recorded_before_anything_else():
    merged = follow_up(RevertPull("closed", True, False), 10.0)
    assert (merged.step, merged.outcome) == (FollowStep.RECORD, Outcome.MERGED)
    closed = follow_up(RevertPull("closed", False, True), None)
    assert (closed.step, closed.outcome) == (FollowStep.RECORD, Outcome.CLOSED)


def test_still_needed_is_kept():
    assert follow_up(OPEN, None).step is FollowStep.KEEP


def test_stand_down_as_configured():
    assert follow_up(OPEN, 5.0).step is FollowStep.CLOSE
    assert follow_up(OPEN, 5.0, action=StandDown.MARK).step is FollowStep.MARK
    assert follow_up(OPEN, 5.0, action=StandDown.COMMENT).step is FollowStep.COMMENT
    assert follow_up(OPEN, 5.0).outcome is Outcome.SUPERSEDED


def test_a_pr_a_human_touched_is_marked_not_closed_unless_configured():
    touched = OPEN._replace(touched=True)
    plan = follow_up(touched, 5.0)
    assert plan.step is FollowStep.MARK
    assert "human" in plan.why
    assert follow_up(touched, 5.0, close_touched=True).step is FollowStep.CLOSE


def test_touched_by_anyone_but_the_bot():
    assert not touched_by_human("bot", ["bot", "BOT"], [], ["bot"])
    assert touched_by_human("bot", ["bot", "ada"])
    assert touched_by_human("bot", [], ["grace"])
    assert touched_by_human("bot", [], [], ["bot", None])


def test_pull_request_branches():
    assert pull_number_of_branch("refs/pull/42/merge") == 42
    assert pull_number_of_branch("refs/pull/7/head") == 7
    assert pull_number_of_branch("main") is None
    assert pull_number_of_branch(None) is None
    assert pull_number_of_branch("refs/pull/x/merge") is None


def test_counterpart_of_a_pull_request_builder():
    qualified = ["AMD64 Ubuntu 3.x", "ARM64 macOS 3.x"]
    assert counterpart("AMD64 Ubuntu PR", qualified) == "AMD64 Ubuntu 3.x"
    assert counterpart("ARM64 macOS 3.x", qualified) == "ARM64 macOS 3.x"
    assert counterpart("AMD64 Windows PR", qualified) is None
    assert counterpart("AMD64 Windows PR", ["AMD64 Windows"]) == "AMD64 Windows"
    assert counterpart("PR", qualified) is None
    # Ambiguous: two qualified builders of the same worker.
    assert counterpart("AMD64 Ubuntu PR", ["AMD64 Ubuntu 3.x", "AMD64 Ubuntu 3.13"]) is None


def _build(builder: str, number: int, result: Result) -> RevertBuild:
    return RevertBuild(builder, builder.replace("3.x", "PR"), number, int(result))


def test_summary_latest_build_decides_and_neutral_results_wait():
    builds = [
        _build("a 3.x", 1, Result.FAILURE),
        _build("a 3.x", 2, Result.SUCCESS),
        _build("b 3.x", 1, Result.EXCEPTION),
    ]
    summary = summarise(["a 3.x", "b 3.x"], builds)
    assert summary.passing == ("a 3.x",)
    assert summary.waiting == ("b 3.x",)
    assert not summary.fixes
    text = summary_comment(summary)
    assert text.startswith(SUMMARY_MARKER)
    assert "Waiting for the other builders" in text


def test_summary_says_plainly_when_the_revert_is_not_the_fix():
    summary = summarise(
        ["a 3.x", "b 3.x"], [_build("a 3.x", 1, Result.SUCCESS), _build("b 3.x", 4, Result.FAILURE)]
    )
    assert summary.failing == ("b 3.x",)
    assert "this revert is not the fix" in summary_comment(summary)


def test_summary_when_the_revert_fixes_every_builder():
    summary = summarise(["a 3.x"], [_build("a 3.x", 1, Result.WARNINGS)])
    assert summary.fixes
    assert "it fixes the breakage" in summary_comment(summary)


def test_summary_escapes_builder_names():
    summary = summarise(["@everyone <b>"], [])
    text = summary_comment(summary)
    # Inline code keeps HTML inert; the @ is defused there too (GitHub's
    # notifications are not read from the rendered page alone).
    assert "`@\u200beveryone <b>`" in text


def test_stand_down_comment_says_why_and_what():
    assert "Closing it" in stand_down_comment("green", closing=True, touched=False)
    assert "left open because someone" in stand_down_comment("green", False, touched=True)


def _change(title: str, message: str = "") -> Change:
    return Change("f" * 40, "ada", title, 0.0, message=message or title)


def test_relands_by_gits_wordings():
    title = "gh-2: Tweak the parser (#2)"
    assert is_reland(_change(f'Reapply "{title}"'), title)
    assert is_reland(_change(f'Revert "Revert "{title}""'), title)
    again = _change("Again", "Again\n\nThis reverts commit abcdef1234.")
    assert is_reland(again, title, "abcdef12")
    assert not is_reland(_change("gh-3: Other"), title, "abcdef12")
