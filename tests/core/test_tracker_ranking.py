"""A tracker without ranking decides as one with it: the ranking only shows.

A sweep's trackers go without the ranking of a multiple-changes verdict's
suspects (its rows count verdicts and show none): that is sound only if
the ranking decides nothing.
"""

from __future__ import annotations

import pytest

from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Streak, Verdict
from tests.generated import generated_builds


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> list:
    """Four weeks of a small synthetic fleet: builders back after gaps blame several changes."""
    path = tmp_path_factory.mktemp("ranking") / "h.sqlite"
    return generated_builds(path, seed=5, days=28, builders=40)


def _unranked(event: Verdict | Streak) -> Verdict | Streak:
    """The event as a tracker without ranking gives it."""
    if isinstance(event, Verdict):
        return event._replace(ranked=())
    return event._replace(verdict=event.verdict._replace(ranked=()))


@pytest.mark.parametrize("failures", [2, 3])
def test_a_tracker_without_ranking_gives_the_same_events_unranked(history, failures) -> None:
    policy = Policy(failures=failures)
    ranking, without = StreakTracker(policy), StreakTracker(policy, ranking=False)
    ranked = ranking.feed_all(history) + list(ranking.finish(1e12))
    unranked = without.feed_all(history) + list(without.finish(1e12))
    # The history holds what is ranked, or the comparison would prove nothing.
    several = [e for e in ranked if isinstance(e, Verdict) and e.ranked]
    assert several and all(v.reason is Reason.MULTIPLE_CHANGES for v in several)
    assert not any(isinstance(e, Verdict) and e.ranked for e in unranked)
    assert unranked == [_unranked(e) for e in ranked]
