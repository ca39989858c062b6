"""False-positive feedback on a filed revert PR: real ledger (SQLite), real client, the stand-in.

A maintainer's ``/wrong-revert`` comment (or the label) is recorded with who
and when; an outsider's is ignored and logged; a merged revert whose change
is relanded unchanged counts as a false positive too.  The weekly metrics,
computed by the core from the ledger's rows, say so.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from buildbot_revert.core import precision
from buildbot_revert.core.feedback import WRONG_LABEL
from buildbot_revert.core.model import Change
from testkit.github import FastClock
from tests.plugin.test_follow_up import filed, run


@pytest.fixture
def clock():
    return FastClock(reactor)


@defer.inlineCallbacks
def followed(github, ledger, clock):
    """A revert PR filed, and the follow-up that reads reports at every check."""
    _, follow, entry, _ = yield filed(github, ledger, clock)
    assert follow.feedback.every == 600.0  # ten follow-up intervals of 60 s
    follow.feedback.every = 0.0
    return follow, entry


def false_positives(ledger_rows: list[precision.FiledRevert]) -> int:
    return sum(w.false_positives for w in precision.weekly(ledger_rows))


@pytest_twisted.inlineCallbacks
def test_a_maintainers_wrong_revert_comment_is_recorded_an_outsiders_is_not(
    github, ledger, clock, logged
):
    follow, entry = yield followed(github, ledger, clock)
    github.comment_as(entry.revert_pr, "mallory", "/wrong-revert")
    yield run(follow.check())
    assert (yield ledger.wrong.of([entry.revision])) == {}
    assert any("ignored the report of a wrong revert (comment) by 'mallory'" in m for m in logged)
    # Read every ``every`` seconds only: a check in between asks GitHub nothing.
    follow.feedback.every = 3600.0
    github.grant("grace", "write")
    github.comment_as(entry.revert_pr, "grace", "/wrong-revert")
    yield run(follow.check())
    assert (yield ledger.wrong.of([entry.revision])) == {}
    follow.feedback.every = 0.0
    assert false_positives((yield ledger.wrong.filed_reverts(0.0))) == 0

    github.grant("grace", "write")
    github.comment_as(entry.revert_pr, "grace", "Looked at it.\n/wrong-revert: the test is flaky")
    before_check = clock.seconds()
    yield run(follow.check())
    report = (yield ledger.wrong.of([entry.revision]))[entry.revision]
    assert (report.login, report.how, report.revert_pr) == ("grace", "comment", entry.revert_pr)
    assert before_check <= report.reported_at <= clock.seconds()
    [row] = yield ledger.wrong.filed_reverts(0.0)
    assert row.reported_wrong_at == report.reported_at and false_positives([row]) == 1
    # Recorded: not read again, not written twice.
    before = len(github.requests)
    yield run(follow.check())
    assert not any(
        f"/issues/{entry.revert_pr}/comments" in r.path for r in github.requests[before:]
    )


@pytest_twisted.inlineCallbacks
def test_the_label_counts_when_a_maintainer_set_it(github, ledger, clock):
    follow, entry = yield followed(github, ledger, clock)
    github.label_as(entry.revert_pr, "mallory", WRONG_LABEL)
    yield run(follow.check())
    assert (yield ledger.wrong.of([entry.revision])) == {}
    github.grant("maint", "maintain")
    github.label_as(entry.revert_pr, "maint", "other")  # the latest setter of *this* label counts
    github.pulls[entry.revert_pr].labels.remove(WRONG_LABEL)
    github.label_as(entry.revert_pr, "maint", WRONG_LABEL)
    yield run(follow.check())
    report = (yield ledger.wrong.of([entry.revision]))[entry.revision]
    assert (report.login, report.how) == ("maint", "label")


@pytest_twisted.inlineCallbacks
def test_a_merged_revert_relanded_unchanged_is_a_false_positive(github, ledger, clock):
    follow, entry = yield followed(github, ledger, clock)
    github.merge_pull(entry.revert_pr, "grace")
    yield run(follow.check())
    [row] = yield ledger.wrong.filed_reverts(0.0)
    assert row.outcome == "merged" and false_positives([row]) == 0
    reland = Change("f" * 40, "Alice <alice@example.org>", f'Reapply "{entry.title}"', 1.8e9)
    yield run(follow.note_changes([reland]))
    [row] = yield ledger.wrong.filed_reverts(0.0)
    assert row.outcome == "relanded" and row.reported_wrong_at is None
    [week] = precision.weekly([row])
    assert (week.filed, week.merged, week.false_positives) == (1, 1, 1)
