"""The startup benchmark's ``--check``: what the plugin's cold rebuild gathered and decided.

A small history is written into a master's database; the builds the
plugin's gatherer produced are compared with the records their rows were
written from, its verdicts with a tracker fed those records, and with
``simulator.analysis.replay`` of the history file.
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.startup_starts import (
    COLD_LINE,
    WARM_LINE,
    Prepared,
    Start,
    cleanup,
    database,
    prepare,
)
from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from simulator.analysis.replay import ReplayResult, Selection, replay, replay_builds
from simulator.history.store import HistoryStore
from testkit.buildbot.bulk_history import expected_build


def _key(v: Verdict) -> tuple[Any, ...]:
    """What a verdict decided, without times or wording."""
    suspect = v.suspect.revision if v.suspect else None
    request = v.request.revision if v.request else None
    return (v.builder, v.first_failing_build, v.reason.value, suspect, request)


def expected_builds(raw: list[Build], shift: int) -> list[Build]:
    """What the gatherer should make of the rows written for ``raw`` (see ``expected_build``)."""
    tipped: set[str] = set()  # builders with a build of a change so far
    out = []
    for build in raw:
        out.append(expected_build(build, shift, build.builder not in tipped))
        if build.changes:
            tipped.add(build.builder)
    return out


def compare_builds(got: list[Build], want: list[Build]) -> Counter[str]:
    """Which fields differ, build by build (in the order they were fed)."""
    diffs: Counter[str] = Counter()
    if len(got) != len(want):
        diffs["count"] += 1
    for g, w in zip(got, want, strict=False):
        for name in Build._fields:
            if getattr(g, name) != getattr(w, name):
                diffs[name] += 1
    return diffs


def tracker_verdicts(
    builds: list[Build], policy: Policy, tags: dict[str, tuple[str, ...]]
) -> list[Verdict]:
    """The verdicts a fresh tracker gives ``builds``, fed as the plugin feeds them."""
    tracker = StreakTracker(policy, watched=lambda _: True, tags_of=lambda n: tags.get(n, ()))
    return [e for b in builds for e in tracker.feed(b) if isinstance(e, Verdict)]


@dataclass
class Gathered:
    """What the check's two starts gathered and decided, and the history they were made from."""

    prep: Prepared
    cold: Start
    warm: Start
    # Every build the gatherer handed the reporter, and every verdict it logged.
    gathered: list[Build]
    verdicts: list[Verdict]
    policy: Policy
    tags: dict[str, tuple[str, ...]]
    # The history's builds of the master's builders, and its replay.
    raw: list[Build]
    result: ReplayResult


def check(args: argparse.Namespace) -> int:
    """The small-history check; 1 if the plugin gathered or decided other than expected."""
    g = gather(args)
    prep, cold, warm, verdicts = g.prep, g.cold, g.warm, g.verdicts
    want = expected_builds(g.raw, prep.shift)
    print(
        f"history: {prep.builders} builders, {args.days} days, {prep.builds:,} builds "
        f"({prep.written.steps} failed steps written)"
    )
    print(
        f"cold start fed {cold.replayed:,} builds, {len(verdicts)} verdicts; warm start "
        f"restored {warm.restored:,} builds" + ("" if warm.line else " [NOT restored]")
    )
    failed = cold.line is None or warm.line is None or warm.restored != cold.replayed
    diffs = compare_builds(g.gathered, want)
    print(
        f"builds gathered vs the history's records (times in whole seconds, a builder's first "
        f"build blaming its newest change): {len(g.gathered):,} vs {len(want):,}, differing "
        f"fields: {dict(diffs) or 'none'}"
    )
    failed |= bool(diffs)
    narrowed = sum(1 for b, w in zip(g.raw, want, strict=True) if len(b.changes) != len(w.changes))
    print(f"  first builds whose history blamelist has more than the newest change: {narrowed}")
    # Exactly what the plugin decided, against a tracker fed the expected builds.
    exact = tracker_verdicts(want, g.policy, g.tags)
    same = exact == verdicts
    print(
        f"verdicts vs a tracker fed the expected builds: {len(verdicts)} vs {len(exact)}, "
        f"{'identical' if same else 'DIFFERENT'}"
    )
    failed |= not same
    compare_replay(g, same)
    print("check: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def gather(args: argparse.Namespace) -> Gathered:
    """Prepare the master, start it cold (recording) then warm; read the history back."""
    with (
        database(args.db) as db_url,
        tempfile.TemporaryDirectory(prefix="startup-check-") as tmp,
        cleanup() as children,
    ):
        prep = prepare(Path(tmp), children, args, db_url)
        record = Path(tmp) / "gathered.pickle"
        cold = Start.of(children.run("cold", prep.basedir, record), COLD_LINE)
        warm = Start.of(children.run("warm", prep.basedir), WARM_LINE)
        with open(record, "rb") as fh:
            gathered, verdicts, policy = pickle.load(fh)
        store = HistoryStore(prep.history)
        try:
            builders = [b for b in store.builders() if prep.names is None or b.name in prep.names]
            raw = list(store.iter_builds(builder_names=prep.names))
            if prep.names is None:
                result = replay(store, policy, Selection())
            else:  # the history's other builders are not on this master
                selection = Selection(names=prep.names).of_history(builders)
                result = replay_builds(raw, policy, selection, builders)
        finally:
            store.close()
    return Gathered(
        prep=prep,
        cold=cold,
        warm=warm,
        gathered=gathered,
        verdicts=verdicts,
        policy=policy,
        tags={b.name: b.tags for b in builders},
        raw=raw,
        result=result,
    )


def compare_replay(g: Gathered, same: bool) -> None:
    """Print the plugin's verdicts against the simulator's replay of the history file.

    The verdicts its tracker gave while fed: ``tracker.finish`` then adds
    the streaks still open at the end of history, which the plugin, never
    ending, does not.
    """
    verdicts, result = g.verdicts, g.result
    fed = len(tracker_verdicts(g.raw, g.policy, g.tags))
    plugin_keys = Counter(_key(v) for v in verdicts)
    replay_keys = Counter(_key(v) for v in result.verdicts[:fed])
    only_plugin = plugin_keys - replay_keys
    only_replay = replay_keys - plugin_keys
    print(
        f"verdicts vs simulate's replay of the file: {len(verdicts)} vs {fed} "
        f"(and {len(result.verdicts) - fed} more from its end of history); "
        f"only the plugin's: {sum(only_plugin.values())}, only the replay's: "
        f"{sum(only_replay.values())}"
    )
    for key in list(only_plugin)[:5]:
        print(f"  only the plugin's: {key}")
    for key in list(only_replay)[:5]:
        print(f"  only the replay's: {key}")
    if (only_plugin or only_replay) and same:
        print(
            "  (all from the narrowed first blamelists: the verdicts on the expected builds match)"
        )
