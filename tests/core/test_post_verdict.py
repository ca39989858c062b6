"""The post-verdict machine: events in, commands out, with no shell around it.

Hand-written verdicts and builds: what it requests (typed keys), what it
concludes and when, its caps, its timeout, and that its state read back
after a restart carries on where it stopped.
"""

from __future__ import annotations

import json
import pickle

from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.machine_io import (
    BisectionCaps,
    CommentFirst,
    CommentOnly,
    Conclude,
    File,
    Filing,
    GraceCheck,
    Judged,
    KeepWaiting,
    MachineSettings,
    NoLongerNeeded,
    Objection,
    PullRead,
    RequestBuild,
    RevertFollowed,
    StillNeeded,
    Withdraw,
)
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.outcomes import FollowStep, Outcome, RevertPull, StandDown
from buildbot_revert.core.post_verdict import MachineState, PostVerdict
from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verdicts import Reason, RevertRequest, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

GREEN = change("green", when=1.0)
C = tuple(change(f"c{i}", when=100.0 + i) for i in range(1, 8))


def verdict(reason: Reason, suspect: Change | None = None, builder: str = "B") -> Verdict:
    request = None
    if suspect is not None and reason is Reason.REVERT:
        request = RevertRequest(suspect.revision, builder, (7,), "why", 200.0)
    return Verdict(
        builder,
        7,
        reason,
        "the first failing build holds one change",
        200.0,
        suspect=suspect,
        request=request,
        evidence=("test_os",),
        started_at=150.0,
    )


def ran(key: RequestKey, spec: str, at: float = 300.0) -> Build:
    """The build ``key`` asked for, ended as ``spec`` says (S passes, F@os fails alike)."""
    [build] = builds(spec, builder=key.builder, logs=LOGS)
    return build._replace(verification=key.encode(), completed_at=at)


def machine(**settings: object) -> PostVerdict:
    found: list[tuple[str, Change, str]] = []

    def judge_found(builder: str, change: Change, how: str) -> Verdict:
        found.append((builder, change, how))
        return verdict(Reason.REVERT_BY_BISECTION, change)._replace(explanation=how)

    m = PostVerdict(MachineSettings(**settings), judge_found)  # type: ignore[arg-type]
    # The builder last built green at GREEN.
    [green] = builds("S:green", logs=LOGS)
    m.built(green._replace(changes=(GREEN,)))
    return m


def judged(v: Verdict, suspects: tuple[Change, ...], width: int = 1) -> Judged:
    return Judged(v, suspects, tolerated=False, width=width, now=200.0)


def test_a_key_survives_its_text_and_an_english_mark_is_no_key() -> None:
    key = RequestKey("AMD64 Debian: 3.13", 7, "a" * 40, Role.PROBE)
    assert RequestKey.decode(key.encode()) == key
    assert RequestKey.decode("verification build of the parent of change 2") is None
    assert "bisection build (probe) aaaaaaaaaaaa on AMD64 Debian: 3.13" in key.describe()


def test_a_held_verdict_is_filed_with_its_proof_once_the_parent_passes() -> None:
    m = machine(verification=True)
    v = verdict(Reason.REVERT, C[0])
    [request] = m.judged(judged(v, (C[0],)))
    assert isinstance(request, RequestBuild)
    assert request.key == RequestKey("B", 7, "green", Role.PARENT)
    # Another builder qualifies on the held change: it joins, concluded after.
    joined = verdict(Reason.ALREADY_PROPOSED, C[0], builder="B2")
    assert m.judged(judged(joined, (C[0],))) == []
    commands = m.finished(ran(request.key, "S"))
    ended = [c.verdict for c in commands if isinstance(c, Conclude)]
    assert [e.reason for e in ended] == [Reason.REVERT, Reason.ALREADY_PROPOSED]
    assert "; verified: the parent of c1, built now on B" in ended[0].explanation
    assert m.waiting == ()


def test_a_parent_that_fails_alike_withdraws_the_verdict() -> None:
    m = machine(verification=True)
    v = verdict(Reason.REVERT, C[1])
    # Found among two changes: the parent (c1) and the suspect itself are built.
    parent, suspect = (c.key for c in m.judged(judged(v, C[:2])))  # type: ignore[union-attr]
    assert (parent.revision, parent.role, suspect.role) == ("c1", Role.PARENT, Role.SUSPECT)
    assert m.finished(ran(suspect, "F@os")) == []
    [_, ended] = m.finished(ran(parent, "F@os"))
    assert isinstance(ended, Conclude)
    assert (ended.verdict.reason, ended.verdict.request) == (Reason.ENVIRONMENT, None)


def test_a_retried_build_keeps_the_verdict_waiting() -> None:
    m = machine(verification=True)
    [request] = m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    retried = ran(request.key, "S")._replace(result=int(Result.RETRY))  # type: ignore[union-attr]
    assert m.finished(retried) == []
    assert m.waiting == (request.key,)  # type: ignore[union-attr]


def test_a_build_that_never_ran_declines_after_the_timeout() -> None:
    m = machine(verification=True, forced_build_timeout=3600.0)
    m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    assert m.clock_passed(200.0 + 3599.0) == []
    *said, ended = m.clock_passed(200.0 + 3600.0)
    assert isinstance(ended, Conclude) and ended.verdict.reason is Reason.UNVERIFIED
    assert "never ran" in ended.verdict.explanation and m.waiting == ()


def test_bisection_n_sects_three_at_a_time_and_finds_the_culprit() -> None:
    m = machine(bisection=BisectionCaps())
    v = verdict(Reason.MULTIPLE_CHANGES)
    [parent] = m.judged(judged(v, C, width=3))
    assert parent.key.role is Role.BISECTION_PARENT  # type: ignore[union-attr]
    batch = [c.key for c in m.finished(ran(parent.key, "S"))]  # type: ignore[union-attr]
    # The seven gaps from green to c7 (known to fail) cut in four: c1, c3, c5.
    assert [k.revision for k in batch] == ["c1", "c3", "c5"]
    results = {"c1": "S", "c3": "S", "c5": "F@os"}
    assert m.finished(ran(batch[0], results["c1"])) == []
    assert m.finished(ran(batch[1], results["c3"])) == []
    [last] = m.finished(ran(batch[2], results["c5"]))
    assert last.key.revision == "c4"  # type: ignore[union-attr]
    *_, ended = m.finished(ran(last.key, "S"))  # type: ignore[union-attr]
    assert isinstance(ended, Conclude)
    assert (ended.verdict.reason, ended.verdict.suspect) == (Reason.REVERT_BY_BISECTION, C[4])


def test_a_bisection_the_caps_cannot_hold_is_not_begun_and_the_state_survives_a_pickle() -> None:
    m = machine(bisection=BisectionCaps(per_builder_per_day=3))
    v = verdict(Reason.MULTIPLE_CHANGES)
    [parent] = m.judged(judged(v, C[:2]))
    # Taken back by a new process: the search goes on, the builds counted.
    again = PostVerdict(m.settings, m.judge_found, state=pickle.loads(pickle.dumps(m.state)))
    # The parent's request is in the state taken back: the caps count it.
    assert [builder for builder, _ in again.state.requests] == ["B"]
    assert again.restarted({}, 250.0) == [parent]
    [probe] = again.finished(ran(parent.key, "S"))  # type: ignore[union-attr]
    assert probe.key.revision == "c1"  # type: ignore[union-attr]
    # With one build left a day, a new two-change streak is concluded as it came.
    other = verdict(Reason.MULTIPLE_CHANGES, builder="B")._replace(first_failing_build=9)
    assert again.judged(judged(other, C[2:4])) == [Conclude(other)]


def test_the_daily_cap_turns_the_fourth_revert_of_a_day_into_a_comment() -> None:
    m = machine(daily_cap=3)
    filed = [m.filing(Filing(f"r{i}", 1000.0 + i)) for i in range(3)]
    assert filed == [File(f"r{i}") for i in range(3)]
    assert isinstance(m.filing(Filing("r3", 2000.0)), CommentOnly)
    # A day after the first, there is room again.
    assert m.filing(Filing("r4", 1000.0 + 86400.0)) == File("r4")


def test_a_count_the_shell_keeps_decides_the_cap_and_leaves_the_machines_own_alone() -> None:
    m = machine(daily_cap=2)
    assert m.filing(Filing("r0", 1000.0, filed_last_day=1)) == File("r0")
    capped = m.filing(Filing("r1", 1000.0, filed_last_day=2))
    assert capped == CommentOnly("r1", "the daily cap of 2 revert PR(s) is reached")
    # The shell's count is the count: the machine kept none of its own.
    assert m.state.filed == []
    assert m.filing(Filing("r2", 1001.0)) == File("r2")
    assert machine(daily_cap=None).filing(Filing("r3", 0.0, filed_last_day=99)) == File("r3")


HOUR = 3600.0


def test_a_grace_period_warns_first_and_the_cap_still_comes_before_it() -> None:
    m = machine(daily_cap=1, grace_period=HOUR)
    # The deadline counts from when the builder qualified, not from the filing.
    assert m.filing(Filing("r0", 500.0, qualified_at=200.0)) == CommentFirst("r0", 200.0 + HOUR)
    assert m.state.filed == []  # a warning files nothing
    capped = m.filing(Filing("r1", 500.0, filed_last_day=1, qualified_at=200.0))
    assert isinstance(capped, CommentOnly)


def test_at_a_grace_deadline_the_machine_files_waits_or_withdraws() -> None:
    m = machine(grace_period=HOUR)
    red = (Qualified(0.0, None),)
    assert m.grace_over(GraceCheck("r", red, HOUR - 1)) == KeepWaiting("r", HOUR)
    filed = m.grace_over(GraceCheck("r", red, HOUR))
    still_red = "a builder was still red at the end of its grace period (1 builder(s) qualified)"
    assert filed == File("r", at=HOUR, why=still_red)
    # Two builders, each green within its own period: withdrawn as of the last deadline.
    both = (Qualified(0.0, 600.0), Qualified(100.0, 200.0))
    recovered = "every builder that qualified (2) went green within its grace period"
    assert m.grace_over(GraceCheck("r", both, 2 * HOUR)) == Withdraw("r", recovered, 100.0 + HOUR)
    # One green, the other still red before its deadline: wait for that deadline.
    one_red = (Qualified(0.0, 600.0), Qualified(100.0, None))
    assert m.grace_over(GraceCheck("r", one_red, HOUR + 1)) == KeepWaiting("r", 100.0 + HOUR)


def test_an_objection_withdraws_the_revert() -> None:
    said = machine(grace_period=HOUR).objection(Objection("r"))
    assert said == Withdraw("r", "someone objected on the pull request")


def test_a_filed_revert_stands_down_once_every_builder_went_green_without_it() -> None:
    m = machine()
    red = (Qualified(0.0, None), Qualified(50.0, 400.0))
    assert m.followed(RevertFollowed("r", 100.0, red, 500.0)) == StillNeeded("r")
    green = (Qualified(0.0, 300.0), Qualified(50.0, 400.0))
    # Not before it was filed, and only from what is known by ``now``.
    assert m.followed(RevertFollowed("r", 100.0, green, 500.0)) == NoLongerNeeded("r", 400.0)
    assert m.followed(RevertFollowed("r", 100.0, green, 350.0)) == StillNeeded("r")
    assert m.followed(RevertFollowed("r", 450.0, green, None)) == NoLongerNeeded("r", 450.0)


def test_the_machine_chooses_the_follow_up_step_as_configured() -> None:
    open_pull = RevertPull(state="open", merged=False, touched=False)
    touched = RevertPull(state="open", merged=False, touched=True)
    merged = RevertPull(state="closed", merged=True, touched=True)

    def step(pull: RevertPull, at: float | None, **settings: object) -> FollowStep:
        m = PostVerdict(MachineSettings(**settings))  # type: ignore[arg-type]
        return m.pull_read(PullRead("c" * 40, pull, at)).step

    assert step(open_pull, None) is FollowStep.KEEP
    assert step(open_pull, 5.0) is FollowStep.CLOSE
    assert step(touched, 5.0) is FollowStep.MARK
    assert step(touched, 5.0, close_touched=True) is FollowStep.CLOSE
    assert step(open_pull, 5.0, stand_down=StandDown.COMMENT) is FollowStep.COMMENT
    assert step(open_pull, 5.0, stand_down=StandDown.MARK) is FollowStep.MARK
    assert step(merged, 5.0) is FollowStep.RECORD
    plan = PostVerdict(MachineSettings()).pull_read(PullRead("c" * 40, merged, None))
    assert plan.outcome is Outcome.MERGED


def cancelled(key: RequestKey, at: float) -> Build:
    """The build ``key`` asked for, stopped before it ended (a user, or a master's shutdown)."""
    return ran(key, "S", at)._replace(result=int(Result.CANCELLED), failed_steps=())


def test_a_cancelled_build_is_requested_again_and_the_timeout_counts_from_then() -> None:
    m = machine(verification=True, forced_build_timeout=3600.0)
    [request] = m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    key = request.key  # type: ignore[union-attr]
    said, again = m.finished(cancelled(key, 3000.0))
    assert again == RequestBuild(key)
    assert "was cancelled" in said.text and key.describe() in said.text  # type: ignore[union-attr]
    assert m.waiting == (key,) and m.state.requested_again == {key}
    # An hour from the first request has passed, not one from the second.
    assert m.clock_passed(200.0 + 3600.0) == []
    assert m.clock_passed(3000.0 + 3599.0) == []
    # The second build passes: the verdict is filed with its proof, the key forgotten.
    _, ended = m.finished(ran(key, "S", 3100.0))
    assert isinstance(ended, Conclude) and ended.verdict.reason is Reason.REVERT
    assert "; verified: the parent of c1" in ended.verdict.explanation
    assert m.waiting == () and m.state.requested_again == set()


def test_a_build_cancelled_twice_declines_the_verdict_unverified() -> None:
    m = machine(verification=True)
    [request] = m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    key = request.key  # type: ignore[union-attr]
    assert RequestBuild(key) in m.finished(cancelled(key, 300.0))
    commands = m.finished(cancelled(key, 400.0))
    assert not any(isinstance(c, RequestBuild) for c in commands)
    [ended] = [c for c in commands if isinstance(c, Conclude)]
    assert (ended.verdict.reason, ended.verdict.request) == (Reason.UNVERIFIED, None)
    assert m.waiting == () and m.state.requested_again == set()


def test_a_retried_build_is_not_requested_again_by_the_machine() -> None:
    m = machine(verification=True)
    [request] = m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    key = request.key  # type: ignore[union-attr]
    # Buildbot runs a RETRY build again itself, as often as it takes.
    for at in (300.0, 400.0):
        assert m.finished(ran(key, "S", at)._replace(result=int(Result.RETRY))) == []
    assert m.waiting == (key,) and m.state.requested_again == set()


def test_a_cancelled_probe_is_requested_again_once_then_ends_the_search() -> None:
    m = machine(bisection=BisectionCaps())
    [parent] = m.judged(judged(verdict(Reason.MULTIPLE_CHANGES), C[:4]))
    [probe] = m.finished(ran(parent.key, "S"))  # type: ignore[union-attr]
    key = probe.key  # type: ignore[union-attr]
    assert key.role is Role.PROBE
    said, again = m.finished(cancelled(key, 500.0))
    assert again == RequestBuild(key) and "bisection build (probe)" in said.text  # type: ignore[union-attr]
    assert m.state.bisecting[0].requested_at == 500.0
    # Cancelled a second time: judged as any probe that neither passes nor fails alike.
    [ended] = m.finished(cancelled(key, 600.0))
    assert isinstance(ended, Conclude) and ended.verdict.reason is Reason.UNVERIFIED
    assert m.waiting == () and m.state.requested_again == set()


def test_the_keys_requested_again_survive_a_restart_as_data() -> None:
    from buildbot_revert.core.snapshot import RecordKind

    kind = RecordKind("test-machine", {"state": MachineState})
    m = machine(verification=True)
    # (This file's verdicts carry a sketch of a revert request; the format holds real ones.)
    v = verdict(Reason.REVERT, C[0])._replace(request=None)
    [request] = m.judged(judged(v, (C[0],)))
    key = request.key  # type: ignore[union-attr]
    m.finished(cancelled(key, 300.0))
    document = json.loads(json.dumps(kind.save({"state": m.state})))
    state = kind.restore(document)["state"]
    assert state.requested_again == {key} and state.verifying[0].requested_at == 300.0
    # The new process does not request it a third time: the second cancellation is judged.
    again = PostVerdict(m.settings, m.judge_found, state=state)
    [ended] = [c for c in again.finished(cancelled(key, 400.0)) if isinstance(c, Conclude)]
    assert ended.verdict.reason is Reason.UNVERIFIED


def test_a_restart_sends_the_second_request_of_a_cancelled_build_the_master_never_got() -> None:
    m = machine(verification=True)
    [request] = m.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    key = request.key  # type: ignore[union-attr]
    m.finished(cancelled(key, 300.0))
    # Saved with the key requested again; the process stops before sending it.
    again = PostVerdict(m.settings, m.judge_found, state=pickle.loads(pickle.dumps(m.state)))
    # The master holds the first (cancelled) request only: the second is sent.
    assert again.restarted({key: 1}, 500.0) == [RequestBuild(key)]
    assert again.state.verifying[0].requested_at == 500.0
    # Holding both, nothing is sent; a key never cancelled needs one.
    assert again.restarted({key: 2}, 600.0) == []
    fresh = machine(verification=True)
    [first] = fresh.judged(judged(verdict(Reason.REVERT, C[0]), (C[0],)))
    assert fresh.restarted({first.key: 1}, 700.0) == []  # type: ignore[union-attr]
    assert fresh.restarted({}, 700.0) == [first]
