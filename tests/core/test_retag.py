"""A builder's tags given again after a reconfiguration: the next decision reads them."""

from __future__ import annotations

import pickle

from buildbot_revert.core.model import Build
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

T0 = 1_700_000_000.0
BUILDER = "AMD64 Arch"


def breaks(start: float = T0, culprit: str = "b", log: str = "os") -> list[Build]:
    """A green build, then a change that breaks the builder for three builds."""
    shared = {culprit: change(culprit, when=start)}
    spec = f"S:a F:{culprit}@{log} F@{log} F@{log}"
    return builds(spec, builder=BUILDER, changes=shared, logs=LOGS, start=start)


def reasons(events: object) -> list[str]:
    return [e.reason.value for e in events if isinstance(e, Verdict)]  # type: ignore[attr-defined]


def test_without_a_retag_the_streak_proposes() -> None:
    # The control: the same builds on a builder nobody tags propose a revert.
    tracker = StreakTracker()
    assert reasons(tracker.feed_all(breaks())) == ["revert"]


def test_a_builder_tagged_unstable_after_its_first_build_is_tolerated_at_its_next_streak() -> None:
    tracker = StreakTracker()
    green, *red = breaks()
    assert tracker.feed(green) == ()
    assert not tracker.is_tolerated(BUILDER)
    tracker.retag(BUILDER, ("unstable", "3.x"))
    assert tracker.is_tolerated(BUILDER)
    (verdict,) = [e for e in tracker.feed_all(red) if isinstance(e, Verdict)]
    assert verdict.reason.value == "tolerated-builder"
    assert verdict.request is None and tracker.proposed == frozenset()
    assert "tagged unstable" in verdict.explanation


def test_an_open_streak_is_judged_with_the_tags_at_its_decision() -> None:
    tracker = StreakTracker()
    seq = breaks()
    # Green, then the first failure: the streak is open, not decided.
    assert reasons(tracker.feed_all(seq[:2])) == []
    assert tracker.red_streaks()[0].tags == ()
    tracker.retag(BUILDER, ["unstable"])
    assert tracker.red_streaks()[0].tags == ("unstable",)
    assert reasons(tracker.feed_all(seq[2:])) == ["tolerated-builder"]


def test_a_decided_streak_keeps_its_verdict_and_a_builder_untagged_proposes_again() -> None:
    tracker = StreakTracker(tags_of=lambda name: ("unstable",))
    assert reasons(tracker.feed_all(breaks())) == ["tolerated-builder"]
    # The verdict already given stays; the tags read from now on are the new ones.
    tracker.retag(BUILDER, ())
    assert not tracker.is_tolerated(BUILDER)
    later = breaks(T0 + 86400.0, culprit="c", log="ssl")
    assert reasons(tracker.feed_all(later)) == ["revert"]


def test_a_builder_not_seen_yet_is_asked_through_tags_of() -> None:
    asked: list[str] = []

    def tags_of(name: str) -> tuple[str, ...]:
        asked.append(name)
        return ("unstable",)

    tracker = StreakTracker(tags_of=tags_of)
    tracker.retag(BUILDER, ())  # nothing known of it: nothing to change
    assert reasons(tracker.feed_all(breaks())) == ["tolerated-builder"]
    assert asked == [BUILDER]


def test_a_builder_retagged_as_a_pull_request_builder_is_no_evidence_from_then_on() -> None:
    tracker = StreakTracker()
    green, *red = breaks()
    tracker.feed(green)
    tracker.retag(BUILDER, ("PullRequest",))
    assert tracker.feed_all(red) == []
    assert tracker.red_builders() == []


def test_a_restored_tracker_takes_new_tags_too() -> None:
    tracker = StreakTracker()
    green, *red = breaks()
    tracker.feed(green)
    restored: StreakTracker = pickle.loads(pickle.dumps(tracker))
    restored.attach(None, None)
    restored.retag(BUILDER, ("unstable",))
    assert reasons(restored.feed_all(red)) == ["tolerated-builder"]
    # The original, not retagged, still proposes: the restored copy shares nothing.
    assert reasons(tracker.feed_all(red)) == ["revert"]
