"""Which pull requests' failing builds wait for their merge (simulator.history.deferred)."""

from __future__ import annotations

from pathlib import Path

from buildbot_revert.core.model import Change
from simulator.history.deferred import DeferredEvidence, landed_from
from simulator.history.entities import BuildInfo, ChangeInfo
from simulator.history.store import HistoryStore


def change(title: str, branch: str | None = "main") -> Change:
    return Change("0" * 40, "Ada <a@x.org>", title, 1.0, branch=branch)


def info(changeid: int, title: str, branch: str = "main") -> ChangeInfo:
    return ChangeInfo(
        changeid, f"{changeid:040x}", "Ada", f"{title}\n\nBody.", 1.0, (), branch, "r", "", "p", 1
    )


def failing(buildid: int) -> BuildInfo:
    return BuildInfo(
        buildid=buildid,
        builderid=1,
        number=buildid,
        buildrequestid=None,
        workerid=None,
        results=2,
        started_at=1.0,
        complete_at=2.0,
    )


def test_a_change_lands_from_the_pull_request_its_title_names_on_a_branch_only() -> None:
    assert landed_from(change("gh-1: Fix the parser (#201)")) == 201
    # A backport names its own pull request last.
    assert landed_from(change("[3.12] gh-1: Fix the parser (GH-201) (#202)", "3.12")) == 202
    assert landed_from(change("gh-1: Fix the parser")) is None
    # A pull request's own merge ref is no landing.
    assert landed_from(change("gh-1: Fix the parser (#201)", "refs/pull/201/merge")) is None


def test_a_build_waits_until_a_change_merged_from_its_pull_request_is_learnt(
    tmp_path: Path,
) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    store.bookkeeping.ensure_import_tables()
    deferred = DeferredEvidence(store, defer=True)
    branches = {1: "refs/pull/201/merge", 2: "refs/pull/202/merge", 3: "main", 4: None}
    now, waiting = deferred.split([failing(b) for b in branches], branches)
    assert [b.buildid for b in now] == [3, 4]
    assert waiting == {1: 201, 2: 202}
    assert deferred.learn([info(7, "gh-1: Fix (#201)", "refs/pull/202/merge")]) == []
    assert deferred.learn([info(8, "gh-1: Fix (#201)"), info(9, "gh-2: Other (#300)")]) == [1]
    assert deferred.held() == 1
    # Once merged, a pull request's later failing builds are fetched at once.
    now, waiting = deferred.split([failing(5)], {5: "refs/pull/201/merge"})
    assert ([b.buildid for b in now], waiting) == ([5], {})
    # Asked for every failing build's logs, nothing waits.
    every = DeferredEvidence(store, defer=False)
    assert every.split([failing(1)], branches)[1] == {}
    store.close()
