"""The grace rule over several builders (buildbot_revert.core.grace): one rule, both shells."""

from __future__ import annotations

import pytest

from buildbot_revert.core.grace import (
    GraceDecision,
    GraceError,
    ObjectionWindow,
    Qualification,
    Qualified,
    StreakEnd,
    fact,
    objection_window,
    outcome,
)
from buildbot_revert.core.model import FailedStep
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Streak, Verdict
from tests.builds_dsl import builds, change

G = 600.0
REVERT, WAIT, STAND_DOWN = GraceDecision.REVERT, GraceDecision.WAIT, GraceDecision.STAND_DOWN


def test_every_builder_green_by_its_deadline_stands_down_at_the_last_deadline():
    qualified = [Qualified(100.0, 650.0), Qualified(200.0, 700.0), Qualified(150.0, 160.0)]
    fate = outcome(qualified, G, 10_000.0)
    assert (fate.decision, fate.at, fate.builders) == (STAND_DOWN, 800.0, 3)


def test_one_builder_red_at_its_deadline_files_at_that_deadline():
    qualified = [Qualified(100.0, 650.0), Qualified(200.0, None), Qualified(300.0, 905.0)]
    fate = outcome(qualified, G, 10_000.0)
    assert (fate.decision, fate.revert_at) == (REVERT, 800.0)


def test_a_green_build_exactly_at_the_deadline_is_in_time_a_second_later_is_not():
    assert outcome([Qualified(100.0, 700.0)], G, 800.0).decision is STAND_DOWN
    assert outcome([Qualified(100.0, 701.0)], G, 800.0).decision is REVERT


def test_the_outcome_waits_while_a_deadline_is_ahead_and_says_when_to_look_again():
    qualified = [Qualified(100.0, 150.0), Qualified(400.0, None)]
    fate = outcome(qualified, G, 800.0)
    assert (fate.decision, fate.next_at) == (WAIT, 1000.0)
    assert outcome(qualified, G, 1000.0).decision is REVERT


@pytest.mark.parametrize("late", [0.0, 13.0, 3600.0, 30 * 86400.0])
def test_a_timer_that_fires_late_or_after_a_restart_decides_the_same(late):
    # The decision reads only facts dated up to the deadlines: asking later
    # (a late timer, a master back from a restart) gives the same answer.
    recovered = [Qualified(100.0, 650.0), Qualified(120.0, 690.0)]
    red = [Qualified(100.0, 650.0), Qualified(120.0, None)]
    assert outcome(recovered, G, 720.0 + late) == outcome(recovered, G, 720.0)
    assert outcome(red, G, 720.0 + late) == outcome(red, G, 720.0)
    assert outcome(recovered, G, 720.0 + late).decision is STAND_DOWN
    assert outcome(red, G, 720.0 + late).revert_at == 720.0


def test_a_builder_that_qualifies_after_the_revision_stood_down_changes_nothing():
    # Every builder recovered by the last deadline (700): the revision stood down.
    # A builder qualifying later for the same change does not revive it.
    qualified = [Qualified(100.0, 200.0), Qualified(900.0, None)]
    fate = outcome(qualified, G, 10_000.0)
    assert (fate.decision, fate.builders) == (STAND_DOWN, 1)


def test_a_builder_that_qualifies_while_another_waits_joins():
    qualified = [Qualified(100.0, 200.0), Qualified(650.0, None)]
    assert outcome(qualified, G, 10_000.0).revert_at == 1250.0


def test_a_qualification_not_yet_made_is_not_known():
    assert outcome([Qualified(100.0, None), Qualified(900.0, None)], G, 500.0).decision is WAIT
    assert outcome([], G, 500.0).decision is WAIT


def test_a_negative_grace_period_is_refused():
    with pytest.raises(GraceError):
        outcome([Qualified(1.0, None)], -1.0, 10.0)


LOG = "0:00:01 [1/4] test_mod failed\n\n== Tests result: FAILURE ==\n1 test failed:\n    test_mod\n"


def test_facts_come_from_the_trackers_events_as_both_shells_read_them():
    culprit = change("c", when=1_700_000_000.0)
    tracker = StreakTracker()
    events = []
    for i, builder in enumerate(("A", "B")):
        history = builds("S:a F:c F F S", builder=builder, changes={"c": culprit},
                         start=1_700_000_000.0 + i * 60)  # fmt: skip
        history = [
            b._replace(failed_steps=(FailedStep("test", 2, LOG),), worker=f"w{i}")
            if b.result == 2
            else b
            for b in history
        ]
        events += tracker.feed_all(history)
    facts = [f for f in map(fact, events) if f is not None]
    verdicts = [e for e in events if isinstance(e, Verdict)]
    streaks = [e for e in events if isinstance(e, Streak)]
    assert [v.reason for v in verdicts] == [Reason.REVERT, Reason.ALREADY_PROPOSED]
    assert facts == [
        Qualification("c", "A", 2, (2, 3, 4), verdicts[0].decided_at, True),
        StreakEnd("A", 2, streaks[0].ended_at),
        Qualification("c", "B", 2, (2, 3, 4), verdicts[1].decided_at, False),
        StreakEnd("B", 2, streaks[1].ended_at),
    ]


def test_a_streak_no_builder_qualified_on_is_no_fact():
    tracker = StreakTracker()
    events = tracker.feed_all(builds("S:a F:c S", builder="A"))
    assert [fact(e) for e in events] == [None, None]


@pytest.mark.parametrize(
    ("created", "edited", "counts"),
    [
        (900.0, None, False),  # before the warning (a review before the merge)
        (1000.0, None, False),  # the warning's own second: not after it
        (1001.0, None, True),
        (1600.0, None, True),  # at the deadline
        (1600.5, None, False),
        (1100.0, 1100.0, True),  # GitHub's updated_at of a comment never edited
        (1100.0, 1600.0, True),
        (1100.0, 1700.0, False),  # edited after the deadline
        (900.0, 1200.0, False),  # an old comment edited during the grace period
        (None, None, False),  # a comment whose time is unknown
    ],
)
def test_an_objection_counts_after_the_warning_and_by_the_deadline(created, edited, counts):
    assert ObjectionWindow(1000.0, 1600.0).holds(created, edited) is counts


def test_without_the_warning_the_window_opens_when_the_grace_period_started():
    assert objection_window(1010.0, started_at=1000.0, closes=1600.0) == (1010.0, 1600.0)
    assert objection_window(None, started_at=1000.0, closes=1600.0) == (1000.0, 1600.0)
