"""False negatives in the core: which changes are human reverts, of what, and the weekly count."""

from __future__ import annotations

import datetime as dt

from buildbot_revert.core import human_reverts, precision
from buildbot_revert.core.human_reverts import HumanRevert, RevertNames, SeenRed
from buildbot_revert.core.model import Change
from buildbot_revert.core.precision import FiledRevert, Week
from buildbot_revert.core.references import revert_marker, revert_title, reverts_commit

BROKE = "3f2a9c0d" + "1" * 32
OTHER = "aa11bb22" + "2" * 32
TITLE = "gh-7: Speed up the parser (#70)"


def ts(day: str) -> float:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()


def change(title: str, message: str = "", revision: str = "f" * 40, when: float = 0.0) -> Change:
    return Change(revision, "ada", title, when, message=f"{title}\n\n{message}".strip())


def test_git_and_github_wordings_are_human_reverts_and_the_bots_own_never():
    git = change(revert_title(TITLE), reverts_commit(BROKE))
    assert human_reverts.named(git) == RevertNames(title=TITLE, shas=(BROKE,))
    # GitHub's revert button quotes the PR title; the squash merge adds its number.
    button = change('Revert "gh-7: Speed up the parser" (#71)', "Reverts python/cpython#70")
    assert human_reverts.named(button) == RevertNames("gh-7: Speed up the parser", ())
    short = change("Undo the parser change", f"This reverts commit {BROKE[:9].upper()}.")
    assert human_reverts.named(short) == RevertNames(None, (BROKE[:9],))
    # The bot's revert commit (and its PR's body, squash-merged) carries its marker.
    bots = change(revert_title(TITLE), f"{reverts_commit(BROKE)}\n\n{revert_marker(BROKE)}")
    assert human_reverts.named(bots) is None
    assert human_reverts.named(change("gh-8: Revert to the old lexer")) is None
    assert human_reverts.named(change('Revert ""')) is None


def test_a_human_revert_of_a_change_the_bot_declined_is_a_false_negative():
    declined = SeenRed(BROKE, None, "ranked: multiple-changes")
    revert = change(revert_title(TITLE), reverts_commit(BROKE), "e" * 40, ts("2026-12-02"))
    assert human_reverts.missed(revert, [declined]) == HumanRevert(
        revert="e" * 40,
        reverted_at=ts("2026-12-02"),
        revision=BROKE,
        title=None,
        how="ranked: multiple-changes",
    )
    # Named by title alone: the title the bot kept, its PR suffix aside.
    titled = SeenRed(BROKE, TITLE, "declined: flaky-builder")
    button = change('Revert "gh-7: Speed up the parser" (#71)', "Reverts #70")
    assert human_reverts.missed(button, [titled]).revision == BROKE


def test_no_false_negative_without_red_or_with_the_bots_own_revert():
    revert = change(revert_title(TITLE), reverts_commit(BROKE))
    # Never seen red: the bot had nothing to go on.
    assert human_reverts.missed(revert, [SeenRed(OTHER, "gh-9: Other (#90)", "x")]) is None
    assert human_reverts.missed(revert, []) is None
    # The bot filed a revert for it (one of its records says so): not missed.
    seen = [SeenRed(BROKE, TITLE, "declined: x"), SeenRed(BROKE, TITLE, "ledger: filed", True)]
    assert human_reverts.missed(revert, seen) is None
    # Its own merged revert commit is never a human's.
    bots = change(revert_title(TITLE), f"{reverts_commit(BROKE)}\n{revert_marker(BROKE)}")
    assert human_reverts.missed(bots, [SeenRed(BROKE, TITLE, "ledger: commented")]) is None
    # A change does not revert itself.
    itself = change(revert_title(TITLE), "", BROKE)
    assert human_reverts.missed(itself, [SeenRed(BROKE, TITLE, "declined: x")]) is None


def test_the_revision_named_wins_over_a_change_of_the_same_title():
    same_title = SeenRed(OTHER, TITLE, "declined: x")
    revert = change(revert_title(TITLE), reverts_commit(BROKE))
    assert human_reverts.missed(revert, [same_title]) is None
    found = human_reverts.missed(revert, [same_title, SeenRed(BROKE, None, "ranked: x")])
    assert found is not None and found.revision == BROKE


def test_human_reverts_count_once_in_the_iso_week_they_were_made():
    def human(revert: str, day: str) -> HumanRevert:
        return HumanRevert(revert, ts(day), BROKE, TITLE, "ranked: multiple-changes")

    filed = [FiledRevert("a", ts("2026-12-01T09:00"), "merged")]
    missed = [
        human("r1", "2026-12-06T23:59"),  # Sunday of W49
        human("r1", "2026-12-06T23:59"),  # seen again (another builder): once
        human("r2", "2026-12-08T10:00"),  # W50: a week with no revert filed
    ]
    assert precision.weekly(filed, missed) == (
        Week("2026-W50", ts("2026-12-07"), filed=0, merged=0, stood_down=0, closed=0,
             false_positives=0, false_negatives=1),
        Week("2026-W49", ts("2026-11-30"), filed=1, merged=1, stood_down=0, closed=0,
             false_positives=0, false_negatives=1),
    )  # fmt: skip
