"""The record of flaky test cases: bounded, saved with the tracker, read by the flaky-case guard."""

from __future__ import annotations

import json

from buildbot_revert.core import snapshot
from buildbot_revert.core.flaky_cases import KEPT, FlakyCases
from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import GUARD_NAMES, Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

START = 1_700_000_000.0
DAY = 86400.0
CHANGES = {r: change(r, when=START + i) for i, r in enumerate(("a", "f1", "g1", "f2", "g2"))}
# The change lands a month after the flakes: past failing-before's 14 days.
CHANGES["b"] = change("b", when=START + 30 * DAY - 60)


def on(builder: str, spec: str, offset: float = 0.0) -> list[Build]:
    out = builds(spec, builder=builder, start=START + offset, changes=CHANGES, logs=LOGS)
    return [b._replace(worker=f"w-{builder}") for b in out]


def verdicts(*sequences: list[Build], policy: Policy | None = None) -> list[Verdict]:
    merged = sorted((b for seq in sequences for b in seq), key=lambda b: b.completed_at)
    tracker = StreakTracker(policy or Policy())
    events = tracker.feed_all(merged) + list(tracker.finish(START + 1e8))
    return [e for e in events if isinstance(e, Verdict)]


# test_os failed alone twice on one builder, a month before the streak (past
# failing-before's 14 days), then a change makes it fail three times in a row.
FLAKED_TWICE = on("flaky", "S:a F:f1@os S:g1 F:f2@os S:g2")
STREAK = on("main", "S:g2 F:b@os F@os F@os", offset=30 * DAY)


def test_isolated_failures_are_counted_per_case_with_where_and_when_last() -> None:
    tracker = StreakTracker(Policy())
    tracker.feed_all(FLAKED_TWICE)
    [flake] = tracker.flaky_cases(10)
    assert flake.case.startswith("test_os.") and flake.case.endswith(".test_write")
    assert flake.runs == 2 and flake.builder == "flaky"
    assert flake.at == FLAKED_TWICE[3].completed_at


def test_modules_and_compile_errors_are_not_flaky_cases() -> None:
    tracker = StreakTracker(Policy())
    tracker.feed_all(on("flaky", "S:a F:f1@compile S:g1 F:f2@generic S:g2"))
    assert tracker.flaky_cases(10) == []


def test_the_record_is_bounded_and_forgets_the_case_seen_least_recently() -> None:
    record = FlakyCases()
    record.record(["kept"], "b", 0.0)
    for i in range(KEPT):
        record.record([f"case{i}"], "b", float(i))
        if i == KEPT // 2:
            record.record(["kept"], "b", float(i))  # seen again: moves to the end
    assert record.get("kept") is not None and record.get("kept").runs == 2  # type: ignore[union-attr]
    assert record.get("case0") is None
    assert len(record.top(KEPT * 2)) == KEPT


def test_the_record_is_restored_from_a_snapshot() -> None:
    tracker = StreakTracker(Policy())
    tracker.feed_all(FLAKED_TWICE)
    saved = json.dumps(snapshot.save_tracker(tracker))
    back = snapshot.restore_tracker(json.loads(saved), Policy())
    assert back.flaky_cases(10) == tracker.flaky_cases(10)
    assert [v.reason for v in back.feed_all(STREAK)] == [Reason.FLAKY_CASE]


def test_a_streak_failing_only_a_known_flaky_case_is_declined_naming_it() -> None:
    [*_, last] = verdicts(FLAKED_TWICE, STREAK)
    assert last.builder == "main" and last.reason is Reason.FLAKY_CASE
    assert ".test_write 2 times, last on flaky" in last.explanation


def test_a_case_that_flaked_once_is_not_yet_known() -> None:
    once = on("flaky", "S:a F:f1@os S:g1")
    assert verdicts(once, STREAK)[-1].reason is Reason.REVERT


def test_two_builders_failing_a_case_that_flakes_one_build_in_two_do_not_lift_it() -> None:
    # FLAKED_TWICE: 2 isolated failures in 4 builds, one in two.  Five
    # failing builds on two workers: flakes alone 1 in 32 times, above 1 in 100.
    also = on("other", "S:g2 F:b@os F@os F@os", offset=30 * DAY + 30)
    decided = {v.builder: v.reason for v in verdicts(FLAKED_TWICE, STREAK, also)}
    assert decided["main"] is Reason.FLAKY_CASE and decided["other"] is Reason.FLAKY_CASE
    found = [v for v in verdicts(FLAKED_TWICE, STREAK, also) if v.builder == "main"][-1]
    assert "flakes alone would make the 5 failing builds on 2 builders seen 1 in 32 times" in (
        found.explanation
    )
    assert found.explanation.endswith(
        "building the parent of b on main would settle it (if it fails alike, the change is "
        "not the cause)"
    )


def test_a_known_flaky_case_failing_on_three_builders_three_builds_in_a_row_is_proposed() -> None:
    # Issue 46 (the founding lesson): the same known flake on three workers,
    # three builds each after one change, is not flakes by chance (1 in 128
    # when the first decides, two builds each seen on the others).
    two = on("other", "S:g2 F:b@os F@os F@os", offset=30 * DAY + 30)
    three = on("third", "S:g2 F:b@os F@os F@os", offset=30 * DAY + 60)
    decided = [(v.builder, v.reason) for v in verdicts(FLAKED_TWICE, STREAK, two, three)]
    assert ("main", Reason.REVERT) in decided
    assert not any(reason is Reason.FLAKY_CASE for _, reason in decided)


def test_a_case_failing_alone_once_among_many_green_runs_is_still_declined() -> None:
    # test_os flaked three times in thirty builds (one in ten); now, with a
    # policy deciding at one failure, it fails once on one builder: one in
    # ten is no proof against the change.
    flaky = on("flaky", "S:a " + " ".join(["F:f1@os S:g1 " + "S " * 8] * 3).strip())
    streak = on("main", "S:g2 F:b@os", offset=30 * DAY)
    policy = Policy(failures=1)
    last = verdicts(flaky, streak, policy=policy)[-1]
    assert last.builder == "main" and last.reason is Reason.FLAKY_CASE
    assert "flakes alone would make the 1 failing build seen 1 in 10 times" in last.explanation
    # Asking 1 in 5 of the odds, one in ten no longer declines.
    assert verdicts(flaky, streak, policy=Policy(failures=1, flaky_odds=0.2))[-1].reason is (
        Reason.REVERT
    )


def test_a_record_kept_before_runs_were_counted_declines_as_before() -> None:
    # A restored case without its runs seen (snapshot format 2): its rate is
    # unknown and counts as certain.
    tracker = StreakTracker(Policy())
    tracker.feed_all(FLAKED_TWICE)
    memory = tracker.__getstate__()["_flakes"].cases
    [flake] = memory.top(1)
    memory.record([], "x", 0.0)
    memory._cases[flake.case] = flake._replace(since=())
    two = on("other", "S:g2 F:b@os F@os F@os", offset=30 * DAY + 30)
    three = on("third", "S:g2 F:b@os F@os F@os", offset=30 * DAY + 60)
    merged = sorted(STREAK + two + three, key=lambda b: b.completed_at)
    reasons = {e.reason for e in tracker.feed_all(merged) if isinstance(e, Verdict)}
    assert reasons == {Reason.FLAKY_CASE}


def test_the_guard_can_be_switched_off() -> None:
    policy = Policy(guards=GUARD_NAMES - {"flaky-case"})
    assert verdicts(FLAKED_TWICE, STREAK, policy=policy)[-1].reason is Reason.REVERT
