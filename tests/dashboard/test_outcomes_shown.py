"""The dashboard says how each filed revert PR ended, as the follow-up records it in the ledger."""

from __future__ import annotations

import pytest

from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.outcomes import Outcome
from buildbot_revert.dashboard.collect import _Links, _proposal
from buildbot_revert.plugin.ledger_tables import Entry


def filed(outcome: str | None) -> Entry:
    return Entry(
        revision="a" * 40,
        state=State.FILED,
        builder="fast-linux",
        build_number=7,
        mode="revert",
        master="m1",
        culprit_pr=12,
        revert_pr=13,
        revert_url="https://github.com/o/r/pull/13",
        comment_url=None,
        detail="",
        decided_at=1.0,
        due_at=None,
        filed_at=2.0,
        updated_at=3.0,
        outcome=outcome,
    )


@pytest.mark.parametrize(
    ("outcome", "shown"),
    [
        (None, "revert PR filed and open (followed until it ends)"),
        (Outcome.MERGED, "revert PR merged"),
        (Outcome.CLOSED, "revert PR closed unmerged: a human said no"),
        (Outcome.SUPERSEDED, "stood down: every builder went green without it"),
        (Outcome.RELANDED, "revert PR merged, then the change was relanded"),
    ],
)
def test_a_filed_revert_shows_how_it_ended(outcome: str | None, shown: str) -> None:
    links = _Links("http://127.0.0.1:8010/", {"fast-linux": 1}, None)
    view = _proposal(filed(outcome), links, {})
    assert view.outcome == shown
    assert view.state == "filed"
