"""What a replay keeps of the tracker's verdicts: equal to them, what repeats held once."""

from __future__ import annotations

from buildbot_revert.core.verdicts import RankedSuspect, Reason, Streak, Verdict
from simulator.analysis.keeper import Keeper


def text(*parts: str) -> str:
    """A string made at run time: equal to, never the same object as, another made alike."""
    return "".join(parts)


def ranking(score: str) -> tuple[RankedSuspect, ...]:
    reasons = (text("held by 1 of ", "2 other builders"), text("touched the code of ", "test_os"))
    return (
        RankedSuspect(text("a", "1"), float(score), reasons),
        RankedSuspect(text("b", "2"), float("0"), ()),
    )


def verdict(builder: str, ranked: tuple[RankedSuspect, ...]) -> Verdict:
    return Verdict(
        builder=builder,
        first_failing_build=7,
        reason=Reason.MULTIPLE_CHANGES,
        explanation=text("the first failing build holds ", "2 changes"),
        decided_at=100.0,
        evidence=(text("test_", "os"),),
        ranked=ranked,
    )


def test_kept_verdicts_equal_the_trackers_and_hold_what_repeats_once() -> None:
    verdicts: list[Verdict] = []
    streaks: list[Streak] = []
    keep = Keeper(verdicts, streaks)
    given = [verdict("A", ranking("3")), verdict("B", ranking("3")), verdict("C", ranking("6"))]
    for v in given:
        keep(v)
    assert verdicts == given
    a, b, c = verdicts
    # The same ranking, evidence and sentence from two builders: one copy.
    assert a.ranked is b.ranked and a.evidence is b.evidence and a.explanation is b.explanation
    # Another score: its own ranking, the same reasons.
    assert c.ranked is not a.ranked and c.ranked[0].reasons is a.ranked[0].reasons
    assert [x.revision for x in c.ranked] == ["a1", "b2"]
    assert c.ranked[0].reasons[0] is a.ranked[0].reasons[0]
