"""Tolerated builders (allowed to fail, CPython's ``unstable``) never propose alone."""

from __future__ import annotations

from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

T0 = 1_700_000_000.0
TAGS = {
    "AMD64 Arch unstable": ("unstable", "3.x"),
    "aarch64 Fedora unstable": ("unstable", "tier-2", "3.x"),
    "AMD64 Ubuntu": ("stable", "tier-1", "3.x"),
    "AMD64 Fedora": ("stable", "tier-1", "3.x"),
}
SHARED = {"b": change("b", when=T0)}


def on(builder: str, start: float, worker: str) -> list[Build]:
    seq = builds("S:a F:b@os F@os F@os", builder=builder, changes=SHARED, logs=LOGS, start=start)
    return [b._replace(worker=worker) for b in seq]


def flaky_on(builder: str, start: float, worker: str) -> list[Build]:
    """A flaky past (isolated failures), then the change breaks the builder."""
    flaky = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(4))
    seq = builds(flaky + " F:b@os F@os F@os", builder=builder, changes=SHARED, logs=LOGS,
                 start=start)  # fmt: skip
    return [b._replace(worker=worker) for b in seq]


def decide(*sequences: list[Build], policy: Policy | None = None) -> list[tuple[str, str]]:
    merged = sorted((b for seq in sequences for b in seq), key=lambda b: b.completed_at)
    tracker = StreakTracker(policy, tags_of=lambda name: TAGS.get(name, ()))
    return [(e.builder, e.reason.value) for e in tracker.feed_all(merged) if isinstance(e, Verdict)]


def test_tolerated_builders_alone_do_not_propose() -> None:
    arch = on("AMD64 Arch unstable", T0 + 60, "w1")
    fedora = on("aarch64 Fedora unstable", T0 + 120, "w2")
    assert decide(arch, fedora) == [
        ("AMD64 Arch unstable", "tolerated-builder"),
        ("aarch64 Fedora unstable", "tolerated-builder"),
    ]
    tracker = StreakTracker(tags_of=lambda name: TAGS.get(name, ()))
    (v,) = [e for e in tracker.feed_all(arch) if isinstance(e, Verdict)]
    assert v.request is None and tracker.proposed == frozenset()
    assert v.explanation.startswith("the builder is allowed to fail (tagged unstable)")


def test_one_stable_builder_also_qualifying_proposes() -> None:
    arch = on("AMD64 Arch unstable", T0 + 60, "w1")
    ubuntu = on("AMD64 Ubuntu", T0 + 120, "w2")
    assert decide(arch, ubuntu) == [
        ("AMD64 Arch unstable", "tolerated-builder"),
        ("AMD64 Ubuntu", "revert"),
    ]
    # When the stable builder qualifies first, the tolerated one joins it.
    early = on("AMD64 Ubuntu", T0 - 60, "w2")
    assert decide(arch, early) == [
        ("AMD64 Ubuntu", "revert"),
        ("AMD64 Arch unstable", "already-proposed"),
    ]


def test_a_tolerated_builder_that_needed_corroboration_still_does_not_propose() -> None:
    # Flaky past on both; two workers agree: the stable one proposes, the
    # tolerated one never does, corroborated or not.
    strict = Policy(flaky_threshold=3)
    arch, fedora = flaky_on("AMD64 Arch unstable", T0, "w1"), flaky_on("AMD64 Fedora", T0, "w2")
    # (Its own worker counts for nothing either: it stays flaky-builder.)
    assert decide(fedora, arch, policy=strict)[-2:] == [
        ("AMD64 Fedora", "flaky-builder"),
        ("AMD64 Arch unstable", "flaky-builder"),
    ]


def test_a_tolerated_builder_corroborates_nothing() -> None:
    # A stable builder whose own evidence is weak (a flaky past) is not
    # corroborated by a builder allowed to fail that fails the same way:
    # failing alongside a flake proves as little as failing alone.
    strict = Policy(flaky_threshold=3)
    arch = flaky_on("AMD64 Arch unstable", T0, "w1")
    fedora = flaky_on("AMD64 Fedora", T0 + 60, "w2")
    assert decide(arch, fedora, policy=strict)[-2:] == [
        ("AMD64 Arch unstable", "flaky-builder"),
        ("AMD64 Fedora", "flaky-builder"),
    ]
    # Counter-case: a second stable builder on another worker does count:
    # the odds weigh its failing builds too (issue 46), so the first to
    # decide proposes; asking near certainty, corroboration lifts the second.
    ubuntu = flaky_on("AMD64 Ubuntu", T0, "w1")
    assert decide(ubuntu, fedora, policy=strict)[-2:] == [
        ("AMD64 Ubuntu", "revert"),
        ("AMD64 Fedora", "already-proposed"),
    ]
    certain = Policy(flaky_threshold=3, flaky_odds=1e-9)
    assert decide(ubuntu, fedora, policy=certain)[-2:] == [
        ("AMD64 Ubuntu", "flaky-builder"),
        ("AMD64 Fedora", "revert"),
    ]


def test_the_tolerated_tags_are_configurable() -> None:
    arch = on("AMD64 Arch unstable", T0, "w1")
    nothing_tolerated = Policy(tolerated_tags=frozenset())
    assert decide(arch, policy=nothing_tolerated) == [("AMD64 Arch unstable", "revert")]
    tier1 = Policy(tolerated_tags=frozenset({"tier-1"}))
    assert decide(on("AMD64 Ubuntu", T0, "w1"), policy=tier1) == [
        ("AMD64 Ubuntu", "tolerated-builder")
    ]
    # A tracker told no tags knows no tolerated builder.
    events = StreakTracker().feed_all(arch)
    assert [e.reason.value for e in events if isinstance(e, Verdict)] == ["revert"]
