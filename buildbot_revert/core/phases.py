"""The post-verdict machine's states and moves, as data.

Each verdict the machine handles is in one :class:`Phase`; an event's
:class:`Outcome` moves it to the next, as the table :data:`TRANSITIONS`
says.  The rules that pick the outcome live in :mod:`.post_verdict`
(verification, bisection) and :mod:`.filing_rules` (the daily cap, the
grace period, objections); a move not in the table is a bug (:func:`move`
raises).  Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class Phase(StrEnum):
    """Where one verdict is."""

    JUDGED = "judged"
    VERIFYING = "verifying"
    BISECTING = "bisecting"
    CONCLUDED = "concluded"
    # A concluded revert whose culprit was warned: filed if a builder is still red at its end.
    GRACE = "grace"
    FILED = "filed"
    # The daily cap made a comment of the revert.
    COMMENTED = "commented"
    # Not filed after all: every builder recovered in time, or someone objected.
    WITHDRAWN = "withdrawn"
    # Filed, then no longer needed: every builder went green without the revert.
    STOOD_DOWN = "stood-down"
    # Filed, then merged or closed by a human.
    ENDED = "ended"


class Outcome(StrEnum):
    """What an event did to a verdict."""

    PASS = "pass"  # no method applies: concluded as it came
    HOLD = "hold"  # verification builds requested
    JOIN = "join"  # another builder's qualification on a held suspect
    BISECT = "bisect"  # the first bisection batch requested
    # One of several requested builds finished; a grace period runs on; a
    # filed revert is still needed.
    WAIT = "wait"
    CONFIRMED = "confirmed"  # the verification builds prove it
    DECLINED = "declined"  # they do not, or a probe ended the search
    NEXT_BATCH = "next-batch"  # the search goes on
    FOUND = "found"  # one change is left
    OUT_OF_BUILDS = "out-of-builds"  # the caps stop the search
    TIMED_OUT = "timed-out"  # a requested build never ran
    # A requested build ended cancelled, the first time for its key: requested once more.
    REQUEST_AGAIN = "request-again"
    FILE = "file"  # filed at once, or a builder still red at its grace deadline
    CAPPED = "capped"  # the daily cap is reached: comment only
    COMMENT_FIRST = "comment-first"  # a grace period starts with a warning
    RECOVERED = "recovered"  # every builder that qualified went green (in time)
    OBJECTED = "objected"  # someone with standing said no during the grace period
    HUMAN_ENDED = "human-ended"  # a human merged or closed the filed revert PR


TRANSITIONS: Mapping[tuple[Phase, Outcome], Phase] = {
    (Phase.JUDGED, Outcome.PASS): Phase.CONCLUDED,
    (Phase.JUDGED, Outcome.HOLD): Phase.VERIFYING,
    (Phase.JUDGED, Outcome.JOIN): Phase.VERIFYING,
    (Phase.JUDGED, Outcome.BISECT): Phase.BISECTING,
    (Phase.VERIFYING, Outcome.WAIT): Phase.VERIFYING,
    (Phase.VERIFYING, Outcome.CONFIRMED): Phase.CONCLUDED,
    (Phase.VERIFYING, Outcome.DECLINED): Phase.CONCLUDED,
    (Phase.VERIFYING, Outcome.TIMED_OUT): Phase.CONCLUDED,
    (Phase.VERIFYING, Outcome.REQUEST_AGAIN): Phase.VERIFYING,
    (Phase.BISECTING, Outcome.WAIT): Phase.BISECTING,
    (Phase.BISECTING, Outcome.NEXT_BATCH): Phase.BISECTING,
    (Phase.BISECTING, Outcome.FOUND): Phase.CONCLUDED,
    (Phase.BISECTING, Outcome.DECLINED): Phase.CONCLUDED,
    (Phase.BISECTING, Outcome.OUT_OF_BUILDS): Phase.CONCLUDED,
    (Phase.BISECTING, Outcome.TIMED_OUT): Phase.CONCLUDED,
    (Phase.BISECTING, Outcome.REQUEST_AGAIN): Phase.BISECTING,
    (Phase.CONCLUDED, Outcome.FILE): Phase.FILED,
    (Phase.CONCLUDED, Outcome.CAPPED): Phase.COMMENTED,
    (Phase.CONCLUDED, Outcome.COMMENT_FIRST): Phase.GRACE,
    (Phase.GRACE, Outcome.WAIT): Phase.GRACE,
    (Phase.GRACE, Outcome.FILE): Phase.FILED,
    (Phase.GRACE, Outcome.RECOVERED): Phase.WITHDRAWN,
    (Phase.GRACE, Outcome.OBJECTED): Phase.WITHDRAWN,
    (Phase.FILED, Outcome.WAIT): Phase.FILED,
    (Phase.FILED, Outcome.RECOVERED): Phase.STOOD_DOWN,
    (Phase.FILED, Outcome.HUMAN_ENDED): Phase.ENDED,
}


def move(phase: Phase, outcome: Outcome) -> Phase:
    """The phase ``outcome`` leads to from ``phase`` (:data:`TRANSITIONS`)."""
    try:
        return TRANSITIONS[(phase, outcome)]
    except KeyError:
        raise AssertionError(f"no move from {phase} on {outcome}") from None
