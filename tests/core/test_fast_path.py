"""The positional fast paths make the record their keyword constructor makes.

Each fast path (``new_build``, ``new_change``, ``new_failed_step``,
``new_streak``, ``new_pull_build``) takes one tuple of its record's fields by position, skipping
the constructor: reordering, adding or renaming a field of the record must
fail here rather than silently put a worker's name where a branch belongs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from buildbot_revert.core.model import (
    Build,
    Change,
    FailedStep,
    Result,
    new_build,
    new_change,
    new_failed_step,
)
from buildbot_revert.core.pullbuilds import PullBuild, new_pull_build
from buildbot_revert.core.verdicts import Reason, Streak, Verdict, new_streak

CHANGE = Change(
    revision="abc123",
    author="alice",
    title="Fix the parser",
    when=1000.0,
    pr_number=42,
    message="Fix the parser\n\nLong story.",
    files=("Lib/ast.py",),
    branch="main",
)
STEP = FailedStep(name="test", result=int(Result.FAILURE), log_tail="FAILED test_ast")
BUILD = Build(
    builder="x86 Gentoo",
    number=7,
    result=int(Result.FAILURE),
    started_at=1100.0,
    completed_at=1200.0,
    changes=(CHANGE,),
    failed_steps=(STEP,),
    worker="gentoo-worker",
    branch="main",
    verification="parent of abc123",
)
VERDICT = Verdict(
    builder="x86 Gentoo",
    first_failing_build=7,
    reason=Reason.TOO_SHORT,
    explanation="went green",
    decided_at=1300.0,
)
STREAK = Streak(
    builder="x86 Gentoo",
    first_failing_build=7,
    started_at=1200.0,
    ended_at=1300.0,
    builds=1,
    blamelist=(CHANGE,),
    verdict=VERDICT,
    failing=(BUILD,),
)

PULL_BUILD = PullBuild(
    builder="x86 Gentoo PR",
    number=9,
    worker="gentoo-worker",
    completed_at=1250.0,
    result=int(Result.FAILURE),
    green_before=1000.0,
    failing=frozenset({"test_ast"}),
    unread=BUILD,
)


# The order the fast paths' callers pass the fields in (simulator/history/
# store.py, simulator/analysis/replay.py and core/pullbuilds.py): a record reordered must have
# its callers reviewed before this list is changed.
FIELD_ORDER = {
    Change: (
        "revision", "author", "title", "when", "pr_number", "message", "files", "branch",
    ),
    FailedStep: ("name", "result", "log_tail"),
    Build: (
        "builder", "number", "result", "started_at", "completed_at", "changes",
        "failed_steps", "worker", "branch", "verification",
    ),
    Streak: (
        "builder", "first_failing_build", "started_at", "ended_at", "builds", "blamelist",
        "verdict", "failing",
    ),
    PullBuild: (
        "builder", "number", "worker", "completed_at", "result", "green_before", "failing",
        "unread",
    ),
}  # fmt: skip


@pytest.mark.parametrize("record", list(FIELD_ORDER), ids=lambda r: r.__name__)
def test_the_records_fields_are_in_the_order_their_callers_pass_them(record: type) -> None:
    assert record._fields == FIELD_ORDER[record]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fast", "record"),
    [
        (new_change, CHANGE),
        (new_failed_step, STEP),
        (new_build, BUILD),
        (new_streak, STREAK),
        (new_pull_build, PULL_BUILD),
    ],
    ids=["change", "failed-step", "build", "streak", "pull-build"],
)
def test_a_fast_path_makes_what_the_constructor_makes(
    fast: Callable[[tuple[Any, ...]], Any], record: tuple[Any, ...]
) -> None:
    # Given the fields in the order the callers pass them, it makes the
    # record the keyword constructor made, each field in its place.
    made = fast(tuple(getattr(record, name) for name in FIELD_ORDER[type(record)]))
    assert type(made) is type(record)
    assert made == record
    for field in FIELD_ORDER[type(record)]:
        assert getattr(made, field) == getattr(record, field), field
