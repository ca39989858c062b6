"""Bisection in the core: the revisions it builds, what it finds, how that is judged."""

from __future__ import annotations

from buildbot_revert.core.bisection import Bisection, DailyCaps, builds_needed, worth_bisecting
from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

CHANGES = [change(f"c{i}", when=1_700_000_000.0 + i) for i in range(1, 8)]


def probe(spec: str) -> Build:
    [build] = builds(spec, logs=LOGS)
    return build._replace(verification="bisection build")


def run(culprit: int, changes: int = 7) -> tuple[Bisection, list[str]]:
    """Bisect ``changes`` changes of which ``c{culprit}`` broke test_os; the revisions built."""
    search = Bisection("green", CHANGES[:changes], frozenset({"test_os"}))
    built = []
    while (revision := search.next()) is not None:
        built.append(revision)
        index = -1 if revision == "green" else int(revision[1:])
        assert search.record(revision, probe("F@os" if index >= culprit else "S")) is None
    return search, built


def test_it_builds_the_parent_then_halves_the_range() -> None:
    search, built = run(culprit=3)
    assert built == ["green", "c3", "c1", "c2"]
    assert search.found is not None and search.found.revision == "c3"
    assert "the parent passes, c3 is the first to fail the same way" in search.explain()


def test_two_changes_need_the_parent_and_one_probe() -> None:
    for culprit in (1, 2):
        search, built = run(culprit, changes=2)
        assert built == ["green", "c1"]
        assert search.found is not None and search.found.revision == f"c{culprit}"


def test_every_culprit_is_found_in_few_builds() -> None:
    for culprit in range(1, 8):
        search, built = run(culprit)
        assert search.found is not None and search.found.revision == f"c{culprit}"
        assert len(built) <= 4


def test_a_parent_failing_alike_ends_it_as_the_environment() -> None:
    search = Bisection("green", CHANGES[:3], frozenset({"test_os"}))
    judgement = search.record("green", probe("F@os2"))
    assert judgement is not None and judgement.reason is Reason.ENVIRONMENT
    assert search.found is None


def test_a_probe_failing_otherwise_ends_it_unverified() -> None:
    search = Bisection("green", CHANGES[:3], frozenset({"test_os"}))
    assert search.record("green", probe("S")) is None
    judgement = search.record(search.next() or "", probe("F@ssl"))
    assert judgement is not None and judgement.reason is Reason.UNVERIFIED


def test_the_found_change_is_judged_as_a_single_change() -> None:
    tracker = StreakTracker(Policy())
    c1, c2 = CHANGES[:2]
    spec = builds("S:a F:c1,c2@os F@os F@os", logs=LOGS, changes={"c1": c1, "c2": c2})
    [declined] = [e for e in tracker.feed_all(spec) if isinstance(e, Verdict)]
    assert declined.reason is Reason.MULTIPLE_CHANGES
    found = tracker.judge_found("B", c2, "bisection found it")
    assert found is not None and found.reason is Reason.REVERT_BY_BISECTION
    assert found.request is not None and found.request.revision == "c2"
    assert found.explanation == "bisection found it"
    # Proposed once: the same change from another builder joins it.
    assert "c2" in tracker.proposed


def test_a_found_revert_is_declined() -> None:
    tracker = StreakTracker(Policy())
    revert = change("r", when=1_700_000_000.0, title='Revert "gh-1: x"')
    spec = builds("S:a F:c1,r@os F@os F@os", logs=LOGS, changes={"c1": CHANGES[0], "r": revert})
    tracker.feed_all(spec)
    found = tracker.judge_found("B", revert, "bisection found it")
    assert found is not None and found.reason is Reason.CULPRIT_IS_REVERT
    assert found.request is None


def n_section(
    culprit: int, width: int, changes: int = 7
) -> tuple[Bisection, list[tuple[str, ...]]]:
    """``run`` with ``width`` builds at once: the batches built."""
    search = Bisection("green", CHANGES[:changes], frozenset({"test_os"}))
    batches = []
    while batch := search.batch(width):
        batches.append(batch)
        built = []
        for revision in batch:
            index = -1 if revision == "green" else int(revision[1:])
            built.append((revision, probe("F@os" if index >= culprit else "S")))
        assert search.record_batch(built) is None
    return search, batches


def test_n_section_cuts_what_is_left_into_width_plus_one_parts() -> None:
    search, batches = n_section(culprit=5, width=2)
    # The parent alone; then the seven gaps from the parent to c7 (known to
    # fail) cut in three: c2, c4 (both pass); then c4..c7 in three: c5, c6.
    assert batches == [("green",), ("c2", "c4"), ("c5", "c6")]
    assert search.found is not None and search.found.revision == "c5"


def test_n_section_finds_every_culprit_within_its_builds_needed() -> None:
    for changes in range(2, 8):
        for width in (1, 2, 3, 4):
            for culprit in range(1, changes + 1):
                search, batches = n_section(culprit, width, changes)
                assert search.found is not None and search.found.revision == f"c{culprit}"
                assert all(len(b) <= width for b in batches)
                assert sum(len(b) for b in batches) <= builds_needed(changes, width)


def test_one_build_at_a_time_is_the_halving() -> None:
    for culprit in range(1, 8):
        _, built = run(culprit)
        _, batches = n_section(culprit, width=1)
        assert [r for b in batches for r in b] == built


def test_builds_needed_grows_with_the_width_as_the_rounds_shrink() -> None:
    assert [builds_needed(n) for n in (2, 3, 5, 8, 9)] == [2, 3, 4, 4, 5]
    assert [builds_needed(n, 2) for n in (2, 3, 4, 8, 9)] == [2, 3, 4, 5, 5]


def several(**changed: object) -> Verdict:
    """A multiple-changes verdict over c1..c3, decided a day after c1 landed."""
    verdict = Verdict(
        "B", 2, Reason.MULTIPLE_CHANGES, "", CHANGES[0].when + 86400.0, evidence=("test_os",)
    )
    return verdict._replace(**changed)


def test_which_streaks_bisection_takes_up() -> None:
    caps = {"max_changes": 3, "max_age": 2 * 86400.0}
    assert worth_bisecting(several(), CHANGES[:3], **caps, tolerated=False)
    # Another reason, one change or too many, nothing failed in common,
    # a change too old, a builder allowed to fail: not taken up.
    assert not worth_bisecting(several(reason=Reason.REVERT), CHANGES[:3], **caps, tolerated=False)
    assert not worth_bisecting(several(), CHANGES[:1], **caps, tolerated=False)
    assert not worth_bisecting(several(), CHANGES[:4], **caps, tolerated=False)
    assert not worth_bisecting(several(evidence=()), CHANGES[:3], **caps, tolerated=False)
    late = several(decided_at=CHANGES[0].when + 3 * 86400.0)
    assert not worth_bisecting(late, CHANGES[:3], **caps, tolerated=False)
    assert not worth_bisecting(several(), CHANGES[:3], **caps, tolerated=True)


def test_the_daily_caps_count_the_last_24_hours_in_all_and_per_builder() -> None:
    caps = DailyCaps(per_day=5, per_builder_per_day=3)
    caps.spend("A", 0.0, 2)
    caps.spend("B", 3600.0, 2)
    assert caps.room("A", 7200.0) == 1  # A's own cap
    assert caps.room("C", 7200.0) == 1  # the cap in all
    # A day after A's builds they no longer count; B's still do.
    assert caps.room("A", 86400.0) == 3
    assert caps.room("C", 86400.0) == 3
    caps.reset([("A", 86400.0)] * 3)
    assert caps.room("A", 86400.0) == 0
    assert caps.room("B", 86400.0) == 2
