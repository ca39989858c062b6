"""Several trackers fed the same builds, sharing what does not depend on their policy.

A sweep replays one history under several policies.  The trackers whose
policies agree on the bookkeeping of a build (:func:`_book_key`) share it:
one books each build and every one of them judges it.  A replay is a group
of one: :meth:`TrackerGroup.feed_window` is the loop both feed a stored
history through.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple, TypeVar

from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.streaks import BuilderState
from buildbot_revert.core.tracker import Event, StreakTracker

_NO_EVENTS: tuple[Event, ...] = ()
_FAILURE = int(Result.FAILURE)

Answers = list[tuple[Event, ...]]
Answer = TypeVar("Answer")


class Window(NamedTuple):
    """What :meth:`TrackerGroup.feed_window` counted of the window's builds."""

    builds: int
    # When the window's first and last builds completed (None: no build).
    first: float | None
    last: float | None


def _book_key(policy: Policy) -> tuple[object, ...]:
    """What a policy changes of :meth:`StreakTracker.book`'s bookkeeping.

    Trackers whose policies agree on it note the same for every build.
    """
    return (
        policy.green,
        policy.pull_request_tags,
        policy.pull_request_branches,
        policy.tolerated_tags,
        policy.failing_before_window,
    )


class TrackerGroup:
    """Several trackers fed the same builds, each build noted once for all of them.

    A sweep replays one history under several policies.  Most of what a
    build tells a tracker does not depend on the policy's N or its guards
    (which builder it is, what it built, whether a streak opens or ends:
    :meth:`StreakTracker.book`), and most builds tell nothing else (a green
    build on a green builder, a neutral one).  So the trackers whose
    policies agree on that bookkeeping share it: one of them notes each
    build, and each judges only the FAILURE builds and the green builds
    that end a streak (:meth:`StreakTracker.judge`).  Each tracker answers
    what it answers fed alone (tests/core/test_tracker_group.py).
    """

    __slots__ = ("_books", "_size", "feed")

    def __init__(self, trackers: Sequence[StreakTracker]) -> None:
        by_key: dict[tuple[object, ...], list[int]] = {}
        for i, tracker in enumerate(trackers):
            by_key.setdefault(_book_key(tracker.policy), []).append(i)
        self._books: list[
            tuple[
                Callable[[Build], BuilderState | None],
                int,
                list[tuple[int, Callable[[Build, BuilderState], tuple[Event, ...]]]],
            ]
        ] = []
        for members in by_key.values():
            lead = trackers[members[0]]
            books = lead.books()
            for i in members:
                trackers[i].share_books(books)
            # Past every member's evidence, a FAILURE build changes nothing
            # any of them judges (a streak counts its run's builds, and the
            # failure memory follows the run: see StreakTracker.judge).
            deepest = max(trackers[i].policy.failures for i in members)
            self._books.append((lead.book, deepest, [(i, trackers[i].judge) for i in members]))
        self._size = len(trackers)
        # Each tracker's events for a build, in the trackers' order; None if
        # none judged it.  A sweep's trackers usually keep one set of books.
        self.feed: Callable[[Build], Answers | None] = (
            _one_book(*self._books[0]) if len(self._books) == 1 else self._feed
        )

    def feed_window(
        self,
        builds: Iterable[Build],
        start: float,
        kept: Collection[str],
        take: Callable[[Answers], None],
    ) -> Window:
        """Feed ``builds`` in one loop; count the window's and hand ``take`` their answers.

        A build completed at or after ``start`` by a builder in ``kept`` is
        the window's: it is counted, and when a tracker judged it, the
        answers (as :attr:`feed` gives them) go to ``take``.  Each tracker
        answers what it answers fed one build at a time: this is
        :attr:`feed` and :func:`counting_feed` written out as one loop for
        a stored history's half a million builds a year, where two calls a
        build were a measurable part of a replay (a test holds the loop to
        the two).
        """
        if len(self._books) > 1:
            return _window(builds, start, kept, take, self.feed)
        book, deepest, judges = self._books[0]
        each = [judge for _, judge in judges]
        count = 0
        first: float | None = None
        last: float | None = None
        for build in builds:
            # What the one-book feed does, inline (see _one_book).
            state = book(build)
            answers: Answers | None = None
            if state is not None:
                if build.result == _FAILURE:
                    if state.run.end <= deepest:
                        answers = [judge(build, state) for judge in each]
                elif state.ended:
                    answers = [judge(build, state) for judge in each]
            at = build.completed_at
            if at < start or build.builder not in kept:
                continue
            if first is None:
                first = at
            last = at
            count += 1
            if answers is not None:
                take(answers)
        return Window(builds=count, first=first, last=last)

    def _feed(self, build: Build) -> Answers | None:
        """Each tracker's events for ``build``, in the trackers' order; None if none judged it."""
        out: list[tuple[Event, ...]] | None = None
        for book, deepest, judges in self._books:
            state = book(build)
            if state is None:
                continue
            if build.result == _FAILURE:
                if state.run.end > deepest:
                    continue
            elif not state.ended:
                continue
            if out is None:
                out = [_NO_EVENTS] * self._size
            for i, judge in judges:
                out[i] = judge(build, state)
        return out


def _one_book(
    book: Callable[[Build], BuilderState | None],
    deepest: int,
    judges: list[tuple[int, Callable[[Build, BuilderState], tuple[Event, ...]]]],
) -> Callable[[Build], list[tuple[Event, ...]] | None]:
    """:meth:`TrackerGroup.feed` when every tracker keeps the same books.

    The judges are then every tracker, in order.  A closure over locals:
    it runs for every build of the history.
    """
    each = [judge for _, judge in judges]

    def feed(build: Build) -> list[tuple[Event, ...]] | None:
        state = book(build)
        if state is None:
            return None
        if build.result == _FAILURE:
            if state.run.end > deepest:
                return None
        elif not state.ended:
            return None
        return [judge(build, state) for judge in each]

    return feed


def _window(
    builds: Iterable[Build],
    start: float,
    kept: Collection[str],
    take: Callable[[Answers], None],
    feed: Callable[[Build], Answers | None],
) -> Window:
    """:meth:`TrackerGroup.feed_window` through ``feed``, a build at a time."""
    window = counting_feed(start, kept, feed, take)
    for build in builds:
        window.feed(build)
    return window.counted()


class WindowFeed(NamedTuple):
    """A feed that counts the window's builds, and what it has counted so far."""

    feed: Callable[[Build], None]
    counted: Callable[[], Window]


def counting_feed(
    start: float,
    kept: Collection[str],
    answer: Callable[[Build], Answer | None],
    take: Callable[[Answer], None],
) -> WindowFeed:
    """Feed each build to ``answer``; count the window's builds and ``take`` their answers.

    What :meth:`TrackerGroup.feed_window` does in one loop, a build at a
    time, for a shell that feeds builds one by one (a replay that plays
    out the post-verdict machine).  Builds before ``start`` are the
    warm-up, whose decisions are not reported (every event of a warm-up
    build began before it); builds of builders outside ``kept`` are
    evidence only.  A window build's answer, when there is one (not
    empty, not None), goes to ``take``.
    """
    count = 0
    first: float | None = None
    last: float | None = None

    def feed(build: Build) -> None:
        nonlocal count, first, last
        answered = answer(build)
        at = build.completed_at
        if at < start or build.builder not in kept:
            return
        if first is None:
            first = at
        last = at
        count += 1
        if answered:
            take(answered)

    def counted() -> Window:
        return Window(builds=count, first=first, last=last)

    return WindowFeed(feed=feed, counted=counted)
