"""Parity: the plugin and the simulator give the same verdicts for one history.

One history goes into a real in-process master through its data API: three
builders, shared changes, collapsed builds (a build jumps several changes),
forced builds with no change, neutral results, real breakages and flaky
failures with regrtest-like stdio logs.  The plugin (the reporter loaded from
master.cfg, in dry-run) decides live as the builds finish.  The simulator
then pulls the same master over its REST API with its importer and replays
the history.  The verdicts must be identical, field by field.

A second, scripted history holds what issue 12's rules look at: a
documentation-only change landing just before an unrelated breakage, a
builder allowed to fail (``unstable``) breaking alone, and a pull request
whose own pre-merge builds failed (on a ``PullRequest`` builder, and on a
branch builder building the PR's merge ref) before it was merged and broke a
builder.  The plugin learns tags and branches from the master's data API and
database, the simulator from the pulled history: both must decline the
first two and propose the third.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Generator
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import reactor, task, threads

from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.model import Result
from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.replay import Selection, replay
from simulator.history.importer import pull
from simulator.history.rest_client import BuildbotAPI
from simulator.history.store import HistoryStore
from simulator.progress import replay_with_progress
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.processes import free_port

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

BUILDERS = [
    ("AMD64 Debian", ["stable", "tier-1"]),
    ("ARM64 macOS", ["stable", "tier-2"]),
    ("AMD64 Refleaks", ["stable", "tier-1", "refleak"]),
]
F, S, X = int(Result.FAILURE), int(Result.SUCCESS), int(Result.EXCEPTION)


def regrtest_failure(tests: list[str]) -> str:
    lines = [f"0:00:{i:02d} load avg: 1.00 [{i}/40] {t} failed" for i, t in enumerate(tests, 1)]
    lines += ["", "== Tests result: FAILURE ==", f"{len(tests)} tests failed:"]
    lines.append("    " + " ".join(tests))
    lines.append("make: *** [Makefile:2000: buildbottest] Error 2")
    return "\n".join(lines)


def history(seed: int = 7) -> list[tuple]:
    """(kind, ...) events: ("change", name) or ("build", builder, result, tip, steps)."""
    rng = random.Random(seed)
    events: list[tuple] = []
    broken: dict[str, str] = {}  # builder -> failing test while broken
    changes = 0
    for _ in range(70):
        if rng.random() < 0.45:
            changes += 1
            events.append(("change", changes))
            if rng.random() < 0.2:
                # This change breaks some builders until a later change fixes them.
                for name, _ in BUILDERS:
                    if rng.random() < 0.6:
                        broken[name] = f"test_mod{changes}"
            elif broken and rng.random() < 0.3:
                broken.clear()
        name = rng.choice(BUILDERS)[0]
        roll = rng.random()
        tip = changes if changes and roll > 0.1 else None  # None: a forced build
        if roll < 0.05:
            events.append(("build", name, X, tip, [("test", X, None)]))
        elif name in broken:
            steps = [("test", F, regrtest_failure([broken[name]]))]
            events.append(("build", name, F, tip, steps))
        elif roll > 0.93:
            flaky = regrtest_failure([f"test_flaky{rng.randint(1, 3)}"])
            events.append(("build", name, F, tip, [("test", F, flaky)]))
        else:
            events.append(("build", name, S, tip, [("test", S, None)]))
    return events


def run_both(
    tmp_path,
    builders,
    events,
    reporter_selection: str,
    selection: Selection,
    diffs: Callable[[HistoryStore], DiffReader] | None = None,
) -> Generator[Any, Any, tuple[list[Verdict], list[Verdict]]]:
    """Feed ``events`` to a master with the plugin, then pull and replay it: both verdicts.

    Events are ("change", n, files, branch, title[, "now"]) or ("build", builder,
    results, tip, steps[, worker[, mark]]); a tip is a change's n, or None
    for a forced build; a mark makes it a build buildbot-revert requested;
    ("wait", seconds) lets real time pass (a master stamps builds in whole
    seconds, so a gap since green needs one).  ``diffs`` makes the replay's diff
    reader from the pulled history (as ``simulate --github-diffs`` does).
    """
    master = InProcessMaster(
        tmp_path / "master",
        builders,
        reporter=f"repo='python/cpython', mode='dry-run'{reporter_selection}",
        www_port=free_port(),
    )
    master.create()
    yield master.start()
    try:
        ssids: dict[int, int] = {}
        for event in events:
            if event[0] == "wait":
                yield task.deferLater(reactor, event[1], lambda: None)
            elif event[0] == "change":
                _, n, files, branch, title, *now = event
                ssids[n] = yield master.add_change(
                    f"{n:040x}",
                    f"Author {n} <a{n}@example.org>",
                    f"{title}\n\nDetails.",
                    # A fixed past unless the event asks for the real time.
                    int(time.time()) if now else 1_700_000_000 + n,
                    files,
                    branch,
                )
            else:
                _, name, results, tip, steps, *worker_and_mark = event
                yield master.finish_build(
                    name, results, ssids[tip] if tip is not None else None, steps, *worker_and_mark
                )
        yield master.drain()
        plugin = list(master.reporter.verdicts)

        def simulate() -> list[Verdict]:
            store = HistoryStore(tmp_path / "history.sqlite", create=True)
            try:
                pull(BuildbotAPI(master.url), store)
                policy = master.reporter.settings.policy
                if diffs is None:
                    result = replay(store, policy, selection)
                else:
                    result = replay_with_progress(store, policy, selection, diffs=diffs(store))
            finally:
                store.close()
            # The replay also reports the streaks still open when history ends.
            return [v for v in result.verdicts if v.reason is not Reason.UNFINISHED]

        simulated = yield threads.deferToThread(simulate)
    finally:
        yield master.stop()
    return plugin, simulated


def random_changes(events: list[tuple]) -> list[tuple]:
    """:func:`history`'s ("change", n) events as :func:`run_both` takes them."""
    return [
        ("change", e[1], [f"Lib/mod{e[1]}.py"], "main", f"gh-{e[1]}: Change number {e[1]} "
         f"(#{1000 + e[1]})") if e[0] == "change" else e
        for e in events
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("reporter_selection", "selection"),
    [
        ("", Selection()),
        # The plugin watches tier-1 only; the simulator is told the same.
        # Both still feed every builder, whose failures are evidence.
        (", tags=['tier-1']", Selection(tags=frozenset({"tier-1"}))),
        (", builders='^AMD64'", Selection(builders=re.compile("^AMD64"))),
    ],
    ids=["all", "tags", "regex"],
)
@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_give_identical_verdicts(tmp_path, reporter_selection, selection):
    plugin, simulated = yield from run_both(
        tmp_path, BUILDERS, random_changes(history()), reporter_selection, selection
    )
    reasons = {v.reason for v in plugin}
    if not reporter_selection:
        assert Reason.REVERT in reasons and len(reasons) >= 3, reasons
    else:
        # Only the selected builders' verdicts are reported, by both shells.
        assert plugin and all(v.builder != "ARM64 macOS" for v in plugin), plugin
    assert plugin == simulated


# -- issue 12: relevance, tolerated builders, pull-request builds ---------------------

DEBIAN, WINDOWS, MACOS, DEBIAN_PR = (
    "AMD64 Debian",
    "ARM64 Windows",
    "ARM64 macOS",
    "AMD64 Debian PR",
)
RULES_BUILDERS = [
    (DEBIAN, ["stable", "tier-1"]),
    (WINDOWS, ["unstable", "tier-2"]),  # allowed to fail: never proposes alone
    (MACOS, ["stable", "tier-2"]),
    (DEBIAN_PR, ["PullRequest", "stable", "tier-1"]),  # builds unmerged pull requests
]
PR_BRANCH = "refs/pull/66/merge"


def red(test: str) -> list[tuple[str, int, str | None]]:
    return [("test", F, regrtest_failure([test]))]


GREEN = [("test", S, None)]


def rules_history() -> list[tuple]:
    """Each new rule's case in turn, the builders green in between (see the module docstring)."""
    events: list[tuple] = []

    def change(n: int, files: list[str], title: str, branch: str = "main") -> None:
        events.append(("change", n, files, branch, title))

    def build(name: str, tip: int | None, steps: list) -> None:
        events.append(("build", name, F if steps is not GREEN else S, tip, steps))

    change(1, ["Lib/a.py"], "gh-1: Tidy a (#1001)")
    for name in (DEBIAN, WINDOWS, MACOS):
        build(name, 1, GREEN)
    # A documentation-only change lands just before the world breaks Debian's
    # test_ssl: the change cannot explain it.
    change(2, ["Doc/library/ssl.rst", "Misc/NEWS.d/next/Library/2.rst"], "gh-2: Doc (#1002)")
    build(DEBIAN, 2, red("test_ssl"))
    build(WINDOWS, 2, GREEN)
    build(DEBIAN, 2, red("test_ssl"))
    build(MACOS, 2, GREEN)
    build(DEBIAN, None, red("test_ssl"))
    change(3, ["Lib/test/support/ssl_helper.py"], "gh-3: Follow the new OpenSSL (#1003)")
    for name in (DEBIAN, WINDOWS, MACOS):
        build(name, 3, GREEN)
    # The unstable builder breaks alone: tolerated, it never proposes.
    change(4, ["Lib/b.py"], "gh-4: Speed up b (#1004)")
    build(WINDOWS, 4, red("test_b"))
    build(DEBIAN, 4, GREEN)
    build(WINDOWS, 4, red("test_b"))
    build(MACOS, 4, GREEN)
    build(WINDOWS, None, red("test_b"))
    change(5, ["Lib/b.py"], "gh-5: Fix b on Windows (#1005)")
    for name in (WINDOWS, DEBIAN, MACOS):
        build(name, 5, GREEN)
    # A pull request's own pre-merge builds fail test_c (on the PR builder, and
    # on macOS building the merge ref: known by its branch alone); merged
    # anyway, it breaks Debian.
    change(6, ["Lib/c.py"], "gh-66: Speed up c", branch=PR_BRANCH)
    build(DEBIAN_PR, 6, red("test_c"))
    build(MACOS, 6, red("test_c"))
    # A forced build of the PR builder (its sourcestamp names main): known
    # for a PR build by its builder's tag alone.
    build(DEBIAN_PR, None, red("test_c"))
    change(7, ["Lib/c.py", "Lib/test/test_c.py"], "gh-66: Speed up c (#66)")
    build(DEBIAN, 7, red("test_c"))
    build(MACOS, 7, GREEN)
    build(WINDOWS, 7, GREEN)
    build(DEBIAN, 7, red("test_c"))
    build(DEBIAN_PR, 6, red("test_c"))
    build(DEBIAN, None, red("test_c"))
    return events


@pytest.mark.parametrize(
    ("reporter_selection", "selection"),
    [
        ("", Selection()),
        (", exclude_tags=['PullRequest']", Selection(exclude_tags=frozenset({"PullRequest"}))),
        (
            f", builders={[DEBIAN, WINDOWS]!r}",
            Selection(names=frozenset({DEBIAN, WINDOWS})),
        ),
    ],
    ids=["all", "exclude-tags", "names"],
)
@pytest_twisted.inlineCallbacks
def test_the_new_rules_give_identical_verdicts(tmp_path, reporter_selection, selection):
    plugin, simulated = yield from run_both(
        tmp_path, RULES_BUILDERS, rules_history(), reporter_selection, selection
    )
    got = [(v.builder, v.reason, v.suspect.revision if v.suspect else None) for v in plugin]
    assert got == [
        (DEBIAN, Reason.CHANGE_CANNOT_EXPLAIN, f"{2:040x}"),
        (WINDOWS, Reason.TOLERATED_BUILDER, f"{4:040x}"),
        (DEBIAN, Reason.REVERT, f"{7:040x}"),
    ], plugin
    assert "Doc/library/ssl.rst" in plugin[0].explanation
    assert plugin == simulated


# -- issue 15: intersection -----------------------------------------------------------


def intersection_history() -> list[tuple]:
    """Two builders on their own workers, collapsed differently, broken by one change.

    Debian builds changes 2 and 3 at once, macOS (green on 2) 3 and 4: only
    change 3 is in both first failing builds, and both fail test_c.  A third builder on
    a third worker fails an unrelated test from 2 and 3: no intersection.
    """
    events: list[tuple] = []

    def change(n: int) -> None:
        events.append(("change", n, [f"Lib/m{n}.py"], "main", f"gh-{n}: Change {n} (#{n})"))

    def build(name: str, tip: int | None, steps: list) -> None:
        worker = "w-" + name.replace(" ", "-")
        events.append(("build", name, F if steps is not GREEN else S, tip, steps, worker))

    change(1)
    for name, _ in BUILDERS:
        build(name, 1, GREEN)
    change(2)
    build("ARM64 macOS", 2, GREEN)
    change(3)
    build("AMD64 Debian", 3, red("test_c"))
    build("AMD64 Refleaks", 3, red("test_other"))
    change(4)
    build("ARM64 macOS", 4, red("test_c"))
    for _ in range(2):
        for name, _ in BUILDERS:
            build(name, None, red("test_other" if name == "AMD64 Refleaks" else "test_c"))
    return events


@pytest.mark.parametrize("intersection", [True, False], ids=["on", "off"])
@pytest_twisted.inlineCallbacks
def test_intersection_gives_identical_verdicts(tmp_path, intersection):
    option = "" if intersection else ", policy_options={'intersection': False}"
    plugin, simulated = yield from run_both(
        tmp_path, BUILDERS, intersection_history(), option, Selection()
    )
    got = {v.builder: (v.reason, v.suspect.revision if v.suspect else None) for v in plugin}
    assert got["AMD64 Debian"] == (Reason.MULTIPLE_CHANGES, None)
    assert got["AMD64 Refleaks"] == (Reason.MULTIPLE_CHANGES, None)
    if intersection:
        assert got["ARM64 macOS"] == (Reason.REVERT_BY_INTERSECTION, f"{3:040x}")
        macos = next(v for v in plugin if v.builder == "ARM64 macOS")
        assert "AMD64 Debian (worker w-AMD64-Debian): 2 change(s)" in macos.explanation
    else:
        assert got["ARM64 macOS"] == (Reason.MULTIPLE_CHANGES, None)
    # Each multiple-changes streak carries its ranked suspects, in both
    # shells alike (the equality below compares them too).
    declined = [v for v in plugin if v.reason is Reason.MULTIPLE_CHANGES]
    assert declined and all(len(v.ranked) >= 2 for v in declined)
    assert plugin == simulated


def requested_history() -> list[tuple]:
    """A breakage whose streak a green verification build of the parent interrupts."""
    events: list[tuple] = []
    for n in (1, 2):
        title = f"gh-{n}: Change {n} (#{n})"
        events.append(("change", n, [f"Lib/m{n}.py"], "main", title))
        for name, _ in BUILDERS:
            steps = red("test_c") if n == 2 and name == "AMD64 Debian" else GREEN
            events.append(("build", name, F if steps is not GREEN else S, n, steps))
    mark = "verification build of the parent of change 2"
    events.append(("build", "AMD64 Debian", S, 1, GREEN, None, mark))
    events.append(("build", "AMD64 Debian", F, None, red("test_c")))
    events.append(("build", "AMD64 Debian", F, None, red("test_c")))
    return events


@pytest_twisted.inlineCallbacks
def test_requested_builds_are_no_part_of_a_streak_in_either_shell(tmp_path):
    plugin, simulated = yield from run_both(
        tmp_path, BUILDERS, requested_history(), "", Selection()
    )
    [verdict] = [v for v in plugin if v.builder == "AMD64 Debian"]
    # The green verification build (number 3) neither ended nor joined the streak.
    assert (verdict.reason, verdict.failing_builds) == (Reason.REVERT, (2, 4, 5))
    assert plugin == simulated
