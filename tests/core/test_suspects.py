"""Ranked suspects: each piece of evidence moves a change, says why, and nothing acts on it."""

from __future__ import annotations

import json

from buildbot_revert.core import snapshot
from buildbot_revert.core import suspects as suspects_module
from buildbot_revert.core.diffs import Diff, Hunk
from buildbot_revert.core.intersection import Blamelist
from buildbot_revert.core.model import Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.suspects import DIFFS_UP_TO, KEPT, FileFacts, RankInput, rank_suspects
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason
from tests.builds_dsl import change
from tests.core.test_intersection import CHANGES, START, decide, on

FAILING = frozenset({"test_os"})


def touching(rev: str, *files: str, title: str | None = None) -> Change:
    return change(rev, when=START + len(rev), title=title)._replace(files=files)


def other(name: str, revisions: set[str], failing: frozenset[str] = FAILING) -> Blamelist:
    suspects = tuple(change(r) for r in sorted(revisions))
    return Blamelist(name, f"w-{name}", suspects, failing, frozenset(revisions))


def ranked(suspects: tuple[Change, ...], **given: object) -> list[tuple[str, float, tuple]]:
    fields = {"policy": Policy(), "failing": FAILING, "cases": (), "others": ()} | given
    out = rank_suspects(RankInput(suspects=suspects, **fields))  # type: ignore[arg-type]
    return [(r.revision, r.score, r.reasons) for r in out]


def test_without_evidence_the_suspects_keep_the_order_they_landed_in() -> None:
    suspects = (touching("a", "Lib/a.py"), touching("b", "Lib/b.py"), touching("c", "Lib/c.py"))
    assert ranked(suspects) == [("a", 0.0, ()), ("b", 0.0, ()), ("c", 0.0, ())]


def test_other_builders_failing_alike_that_hold_the_change_raise_it_by_their_share() -> None:
    suspects = (touching("a", "Lib/a.py"), touching("b", "Lib/b.py"))
    others = [
        other("x", {"b", "q"}),
        other("y", {"a", "b"}),
        # Failing something else: says nothing about this streak.
        other("z", {"a"}, frozenset({"test_ssl"})),
    ]
    result = ranked(suspects, others=others)
    assert result[0] == ("b", 3.0, ("held by 2 of 2 other builders failing alike",))
    assert result[1] == ("a", 1.5, ("held by 1 of 2 other builders failing alike",))


def test_a_change_to_the_code_a_failing_test_is_named_after_is_raised() -> None:
    suspects = (touching("a", "Lib/json/__init__.py"), touching("b", "Lib/os.py"))
    assert ranked(suspects)[0] == ("b", 2.0, ("touched the code of test_os",))


def test_with_a_diff_the_failing_case_it_added_links_it_more_strongly() -> None:
    suspects = (touching("a", "Lib/os.py"), touching("b", "Lib/test/test_os.py"))
    hunk = Hunk("Lib/test/test_os.py", "@@ -10,0 +11,3 @@", "", (), ("    def test_write(self):",))
    diffs = {"b": Diff("b", (hunk,))}
    result = ranked(
        suspects,
        cases=("test_os.WriteTests.test_write",),
        diff_of=lambda c: diffs.get(c.revision, Diff(c.revision, ())),
    )
    assert result[0][0] == "b" and result[0][1] == 3.0
    assert "added the failing case test_os.WriteTests.test_write" in result[0][2][0]


def test_documentation_and_reverts_are_pushed_down() -> None:
    suspects = (
        touching("doc", "Doc/library/os.rst"),
        touching("r", "Lib/a.py", title='Revert "gh-1: change x"'),
        touching("c", "Lib/c.py"),
    )
    assert ranked(suspects) == [
        ("c", 0.0, ()),
        ("r", -1.0, ("itself a revert",)),
        ("doc", -3.0, ("documentation only",)),
    ]


def test_a_long_range_keeps_only_the_best_few() -> None:
    suspects = tuple(touching(f"r{i:02}", f"Lib/m{i}.py") for i in range(20))
    assert len(ranked(suspects)) == KEPT


def test_the_tracker_ranks_a_multiple_changes_streak_and_acts_on_nothing() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c@os F@os F@os"),
        on("slow", "S:a1 F:b,c@os2 F@os F@os", offset=60),
    )
    slow = verdicts["slow"]
    # Both builders hold both changes: intersection leaves two, and declines.
    assert slow.reason is Reason.MULTIPLE_CHANGES and slow.request is None
    assert [r.revision for r in slow.ranked] == ["b", "c"]
    assert slow.ranked[0].reasons == ("held by 1 of 1 other builders failing alike",)
    single = decide(on("one", "S:a1 F:b@os F@os F@os"))["one"]
    assert single.reason is Reason.REVERT and single.ranked == ()


def test_a_ranked_verdict_survives_a_snapshot() -> None:
    tracker = StreakTracker(Policy())
    merged = sorted(
        on("fast", "S:a1 F:b,c@os F@os F@os") + on("slow", "S:a1 F:b,d@os F@os", offset=60),
        key=lambda b: b.completed_at,
    )
    tracker.feed_all(merged)
    back = snapshot.restore_tracker(
        json.loads(json.dumps(snapshot.save_tracker(tracker))), Policy()
    )
    held = [s.verdict for s in back.__getstate__()["_streaks"].values() if s.verdict is not None]
    assert any(v.ranked for v in held)
    assert CHANGES["b"].revision in {r.revision for v in held for r in v.ranked}


def test_a_long_range_is_ranked_by_its_files_without_reading_diffs() -> None:
    suspects = tuple(touching(f"r{i:02}", f"Lib/m{i}.py") for i in range(DIFFS_UP_TO + 1))
    asked: list[str] = []

    def diff_of(c: Change) -> Diff:
        asked.append(c.revision)
        return Diff(c.revision, ())

    ranked(suspects, cases=("test_os.T.test_x",), diff_of=diff_of)
    assert asked == []
    ranked(suspects[:DIFFS_UP_TO], cases=("test_os.T.test_x",), diff_of=diff_of)
    assert len(asked) == DIFFS_UP_TO


def test_the_file_facts_hold_a_bounded_number_of_changes() -> None:
    # A tracker runs for months: what it derives of each change's files must
    # not grow with the changes it has seen, and must not change meanwhile.
    facts, policy = FileFacts(), Policy()
    bound = suspects_module._REMEMBERED
    for i in range(3 * bound):
        change_i = touching(f"r{i}", "Doc/a.rst" if i % 2 else "Lib/ssl.py")
        code, docs = facts.files(policy, change_i)
        assert (code, docs) == (((), True) if i % 2 else (("Lib/ssl.py",), False))
        assert facts.tie(policy, change_i, frozenset({"test_ssl"})) == (
            None if i % 2 else "test_ssl"
        )
        assert len(facts._files) <= bound and len(facts._ties) <= bound


def test_file_facts_shared_across_rankings_rank_as_fresh_ones() -> None:
    # A sweep's trackers rank the same suspects (one tuple) on the same or
    # other failures, with other builders holding some of them or none:
    # what the shared facts hold of one ranking must not leak into another.
    suspects = (
        touching("doc", "Doc/library/os.rst"),
        touching("os", "Lib/os.py"),
        touching("rev", "Lib/json/__init__.py", title='Revert "gh-1: change x"'),
        touching("ssl", "Lib/ssl.py"),
    )
    holding = [other(f"b{i}", {"rev", "ssl"} if i < 2 else {"x"}) for i in range(7)]
    ssl = frozenset({"test_ssl"})
    asks = [
        {"failing": FAILING},
        {"failing": FAILING, "others": holding},
        {"failing": ssl},
        {"failing": ssl, "others": [other("o", {"os", "doc"}, ssl)]},
        {"failing": FAILING, "others": holding[:1]},
        {"failing": FAILING},
    ]
    facts = FileFacts()
    shared = [ranked(suspects, facts=facts, **ask) for ask in asks]
    assert shared == [ranked(suspects, **ask) for ask in asks]
    # Worked out once for each of the two failures asked.
    assert len(facts._evidence) == 2
    # Held by 2 of the 7 builders failing alike, then its own points, in that order.
    held = "held by 2 of 7 other builders failing alike"
    assert shared[1] == [
        ("os", 2.0, ("touched the code of test_os",)),
        ("ssl", 0.0 + 3.0 * 2 / 7, (held,)),
        ("rev", 0.0 + 3.0 * 2 / 7 - 1.0, (held, "itself a revert")),
        ("doc", -3.0, ("documentation only",)),
    ]
    assert shared[2][0] == ("ssl", 2.0, ("touched the code of test_ssl",))
