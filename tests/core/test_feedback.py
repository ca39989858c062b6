"""False-positive feedback and the weekly metrics in the core: what reports, what counts."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from buildbot_revert.core import feedback, precision
from buildbot_revert.core.precision import FiledRevert, Week
from buildbot_revert.core.references import MARKER


def test_a_report_is_the_command_at_the_start_of_a_line_and_never_our_own():
    assert feedback.is_report("/wrong-revert")
    assert feedback.is_report("Thanks.\n  /WRONG-REVERT the test is flaky")
    assert not feedback.is_report("please do not /wrong-revert this")
    assert not feedback.is_report("/wrong-reverts") and not feedback.is_report("/wrong-revert-x")
    assert feedback.is_report("/wrong-revert: flaky")
    assert not feedback.is_report(f"{MARKER}\n/wrong-revert")  # the bot's own text
    comments = [("ada", "/wrong-revert"), ("bob", "lgtm"), ("ada", "/wrong-revert again"),
                (None, "/wrong-revert"), ("eve", "x\n/wrong-revert")]  # fmt: skip
    assert feedback.reporters(comments) == ["ada", None, "eve"]


def ts(day: str) -> float:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()


def test_each_revert_counts_in_the_iso_week_it_was_filed():
    reverts = [
        FiledRevert("a", ts("2026-11-30T09:00"), "merged"),  # Monday, W49
        FiledRevert("b", ts("2026-12-06T23:59"), "relanded"),  # Sunday, W49: FP
        FiledRevert("c", ts("2026-12-02T10:00"), "superseded"),
        FiledRevert("d", ts("2026-12-03T10:00"), "merged", reported_wrong_at=ts("2026-12-09")),
        FiledRevert("e", ts("2026-12-04T10:00"), None),
        FiledRevert("f", ts("2026-11-29T10:00"), "closed"),  # Sunday, W48
        FiledRevert("g", ts("2026-11-25T10:00"), "relanded", reported_wrong_at=ts("2026-11-26")),
    ]
    assert precision.weekly(reverts) == (
        Week("2026-W49", ts("2026-11-30"), filed=5, merged=3, stood_down=1, closed=0,
             false_positives=2, false_negatives=0),
        Week("2026-W48", ts("2026-11-23"), filed=2, merged=1, stood_down=0, closed=1,
             false_positives=1, false_negatives=0),  # both reported and relanded: once
    )  # fmt: skip
    assert precision.weekly([]) == ()
    # ISO weeks across a new year: 2026-12-31 is a Thursday of 2026-W53.
    assert precision.iso_week(ts("2027-01-01T12:00"))[0] == "2026-W53"


@given(st.floats(min_value=-2e9, max_value=5e9))
def test_the_iso_week_is_the_calendars(ts):
    day = dt.datetime.fromtimestamp(ts, dt.UTC).date()
    year, week, weekday = day.isocalendar()
    monday = day - dt.timedelta(days=weekday - 1)
    assert precision.iso_week(ts) == (f"{year}-W{week:02d}", ts_of(monday))


def ts_of(day: dt.date) -> float:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()
