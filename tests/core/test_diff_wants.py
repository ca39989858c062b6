"""Which changes' diffs a decision on the next build may read: what the plugin fetches first.

The plugin fetches a suspect's patch from GitHub before it feeds the build
whose decision reads it (the tracker cannot wait), so ``diffs_wanted`` must
name every change the core's reader is then asked for, and, so that GitHub
is asked only at decision time, nothing at the builds that decide nothing.
"""

from __future__ import annotations

import random

from buildbot_revert.core.model import Build, Change, FailedStep, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker

T0 = 1_700_000_000.0
DAY = 86400.0
F, S = int(Result.FAILURE), int(Result.SUCCESS)
LOG = "FAILED tests/test_x.py::test_parse - TypeError: unhashable type\n1 failed in 1.2s\n"
STEPS = (FailedStep("test", F, LOG),)


def change(name: str, at: float, files: tuple[str, ...] = ("x.py",)) -> Change:
    return Change(name, "a", f"change {name}", at, files=files)


def failing(builder: str, number: int, at: float, *changes: Change) -> Build:
    return Build(builder, number, F, at - 60, at, changes, STEPS)


def test_a_single_suspect_is_wanted_at_the_nth_failure_only() -> None:
    tracker = StreakTracker()
    b = change("b", T0 + DAY)
    builds = [Build("B", 1, S, T0 - 60, T0)]
    builds += [failing("B", 2 + k, T0 + DAY + k * 60, *((b,) if k == 0 else ())) for k in range(4)]
    wanted = []
    for build in builds:
        wanted.append(tracker.diffs_wanted(build))
        tracker.feed(build)
    assert wanted == [(), (), (), (b,), ()]


def test_no_diff_is_wanted_of_a_change_without_files_or_on_a_builder_not_watched() -> None:
    for tracker, files in ((StreakTracker(), ()), (StreakTracker(watched=lambda n: False), ("x",))):
        b = change("b", T0 + DAY, files)
        tracker.feed(Build("B", 1, S, T0 - 60, T0))
        tracker.feed(failing("B", 2, T0 + DAY, b))
        tracker.feed(failing("B", 3, T0 + DAY + 60))
        assert tracker.diffs_wanted(failing("B", 4, T0 + DAY + 120)) == ()


def test_every_suspect_of_several_is_wanted_and_a_bisection_build_wants_them_after_a_gap() -> None:
    # The ranking of a multiple-changes verdict reads each suspect's diff.
    b, c = change("b", T0 + DAY), change("c", T0 + DAY + 1, ())
    tracker = StreakTracker(Policy(intersection=False))
    tracker.feed(Build("B", 1, S, T0 - 60, T0))
    tracker.feed(failing("B", 2, T0 + DAY + 60, b, c))
    tracker.feed(failing("B", 3, T0 + DAY + 120))
    assert tracker.diffs_wanted(failing("B", 4, T0 + DAY + 180)) == (b,)
    tracker.feed(failing("B", 4, T0 + DAY + 180))
    # A bisection build judges a change found: stale-green reads it after a long gap only.
    probe = failing("B", 5, T0 + DAY + 240)._replace(verification="mark")
    assert tracker.diffs_wanted(probe, bisection=True) == ()
    stale = StreakTracker()
    stale.feed(Build("B", 1, S, T0 - 60, T0))
    stale.feed(failing("B", 2, T0 + 30 * DAY, b, c))
    assert stale.diffs_wanted(probe, bisection=True) == (b,)
    assert stale.diffs_wanted(probe) == ()


def random_history(seed: int) -> list[Build]:
    """Three builders, changes landing in bursts with idle gaps of up to 20 days."""
    rng = random.Random(seed)
    builds: list[Build] = []
    numbers = {"A": 0, "B": 0, "C": 0}
    # The changes each builder has not built yet: a build holds them all.
    pending: dict[str, list[Change]] = {name: [] for name in numbers}
    at, n = T0, 0
    broken: set[str] = set()
    for _ in range(400):
        at += rng.choice((600.0, 3600.0, 3600.0, 12 * DAY))
        if rng.random() < 0.5:
            n += 1
            files = rng.choice((("x.py",), ("tests/test_x.py",), ("Doc/x.rst",), ()))
            for waiting in pending.values():
                waiting.append(change(f"{n:040x}", at - 300, files))
            if rng.random() < 0.3:
                broken = set(rng.sample(sorted(numbers), rng.randint(1, 3)))
            elif rng.random() < 0.4:
                broken = set()
        for name in numbers:
            if rng.random() < 0.5:
                numbers[name] += 1
                red = name in broken or rng.random() < 0.05
                result, steps = (F, STEPS) if red else (S, ())
                held = tuple(pending[name])
                pending[name].clear()
                builds.append(Build(name, numbers[name], result, at - 60, at, held, steps))
    return builds


def test_every_diff_the_core_reads_was_wanted_before_the_build() -> None:
    asked: list[str] = []
    reads = 0
    for seed in range(8):
        tracker = StreakTracker(
            Policy(stale_green_after=2 * DAY), diffs=lambda c: asked.append(c.revision)
        )
        decisions = 0
        for build in random_history(seed):
            wanted = {c.revision for c in tracker.diffs_wanted(build)}
            asked.clear()
            events = tracker.feed(build)
            decisions += sum(1 for e in events if getattr(e, "failing_builds", None))
            assert set(asked) <= wanted, (seed, build, asked, wanted)
            reads += len(asked)
            # Asked only at a decision: a build that decides nothing wants nothing.
            if wanted:
                assert any(getattr(e, "failing_builds", None) for e in events), (seed, build)
        assert decisions > 5
    assert reads > 10
