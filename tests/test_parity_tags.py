"""Builder tags are read the same way by the plugin's tracker and the simulator's replay.

The replay reads each builder's tags from the history (``Selection.of_history``);
the plugin notes the tags the master gives each builder before its build is
fed (``Pipeline.note_builder``), and again when a reconfiguration changes them.
Both reach the core the same way: ``tags_of`` for a builder first seen,
``StreakTracker.retag`` after, ``BuilderState.retag`` making the flags.  So a
history whose builders carry their tags from the start gives the verdicts the
plugin gives when a reconfiguration tags them before their streak is decided.
"""

from __future__ import annotations

from collections.abc import Sequence

from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from buildbot_revert.plugin.config import parse_arguments
from buildbot_revert.plugin.pipeline import Pipeline
from simulator.analysis.replay import Replayer, Selection
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

T0 = 1_700_000_000.0
# As the history (and the master after its reconfiguration) tags them.
BUILDERS = (
    Builder("AMD64 Arch", ("stable", "unstable")),
    Builder("AMD64 Ubuntu", ("stable", "tier-1")),
    Builder("PR Ubuntu", ("stable", "PullRequest")),
    Builder("Docs", ("docs",)),
)
IDS = {b.name: i for i, b in enumerate(BUILDERS, start=1)}


def history() -> list[Build]:
    """Each builder green, then broken by one change on its own worker (Arch first)."""
    shared = {"b": change("b", when=T0)}
    out: list[Build] = []
    for i, builder in enumerate(BUILDERS):
        seq = builds(
            "S:a F:b@os F@os F@os", builder=builder.name, changes=shared, logs=LOGS,
            start=T0 + 60 * i,
        )  # fmt: skip
        out.extend(b._replace(worker=f"w{i}") for b in seq)
    return sorted(out, key=lambda b: b.completed_at)


def seen(verdicts: Sequence[Verdict]) -> list[tuple[str, int, str]]:
    return [(v.builder, v.first_failing_build, v.reason.value) for v in verdicts]


def replayed() -> list[tuple[str, int, str]]:
    """The simulator's way: tags from the history, the plugin's selection rule."""
    selection = Selection(tags=frozenset({"stable"})).of_history(BUILDERS)
    kept = [b for b in BUILDERS if selection.keeps(b)]
    replayer = Replayer(parse_arguments((), {"repo": "o/r"}).policy, selection, kept)
    for build in history():
        replayer.feed(build)
    return seen(replayer.finish().verdicts)


def plugin(untagged_until_reconfig: bool) -> list[tuple[str, int, str]]:
    """The plugin's way: each builder noted before its build is fed, as Pipeline.feed does.

    ``untagged_until_reconfig``: the master first knows every builder with
    its tags but the tolerated one, and a reconfiguration gives them after
    the green builds, before any streak is decided.
    """
    settings = parse_arguments((), {"repo": "o/r", "tags": ["stable"]})
    pipeline = Pipeline(None, lambda: T0, lambda name, number: None, lambda d, what: None)
    pipeline.settings = settings
    tracker = StreakTracker(
        settings.policy, watched=pipeline.watched.__contains__, tags_of=pipeline.builder_tags
    )
    pipeline.tracker = tracker
    current = {b.name: b for b in BUILDERS}
    if untagged_until_reconfig:
        current["AMD64 Arch"] = Builder("AMD64 Arch", ("stable",))
    verdicts: list[Verdict] = []
    for build in history():
        if build.result != 0 and untagged_until_reconfig:
            # The reconfiguration's builder update event (.builder_updates).
            for builder in BUILDERS:
                pipeline.note_builder(IDS[builder.name], builder)
            current = {b.name: b for b in BUILDERS}
        pipeline.note_builder(IDS[build.builder], current[build.builder])
        events = tracker.feed(build)
        verdicts.extend(
            e for e in events if isinstance(e, Verdict) and e.builder in pipeline.watched
        )
    return seen(verdicts)


def test_the_plugin_and_the_replay_read_a_builders_tags_the_same_way() -> None:
    expected = [
        ("AMD64 Arch", 2, "tolerated-builder"),
        ("AMD64 Ubuntu", 2, "revert"),
    ]
    assert replayed() == expected
    assert plugin(untagged_until_reconfig=False) == expected
    assert plugin(untagged_until_reconfig=True) == expected


def test_without_the_reconfig_the_first_builder_proposes() -> None:
    # The control: the tags the master first gave, never refreshed.
    settings = parse_arguments((), {"repo": "o/r", "tags": ["stable"]})
    tags = {b.name: b.tags for b in BUILDERS} | {"AMD64 Arch": ("stable",)}
    tracker = StreakTracker(settings.policy, tags_of=lambda name: tags[name])
    reasons = [
        (e.builder, e.reason.value)
        for e in tracker.feed_all(history())
        if isinstance(e, Verdict) and e.builder in {"AMD64 Arch", "AMD64 Ubuntu"}
    ]
    assert reasons == [("AMD64 Arch", "revert"), ("AMD64 Ubuntu", "already-proposed")]
