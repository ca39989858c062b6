"""Progress bars for long replays and sweeps, shown only on a terminal.

A replay of a year takes seconds to minutes; a person at a terminal wants to
see it move, a pipe or a CI log does not want bar-drawing escape codes.  The
bars go to stderr so that a report printed on stdout stays clean.  The
analysis knows nothing of them: it takes the builds to replay, and a
callback for each finished step.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EVIDENCE_DEPTH
from buildbot_revert.core.policy import Policy
from simulator.analysis.culprit_methods import Methods
from simulator.analysis.play import Play
from simulator.analysis.replay import ReplayResult, Selection, replay_builds, select_builds
from simulator.analysis.sweep import Axis, SweepResult, combinations, run_sweep
from simulator.history.store import HistoryStore

if TYPE_CHECKING:
    from simulator.history.importer import PullStats

T = TypeVar("T")

# Updating the bar for every build would cost more than the replay itself.
_CHUNK = 5000


def wanted(stream: IO[str] | None = None) -> bool:
    """Whether to draw: only when the stream is a terminal."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def counted(
    items: Iterable[T], total: int | None, label: str, *, enabled: bool | None = None
) -> Iterable[T]:
    """``items`` unchanged, advancing a bar of ``total`` steps as they pass.

    Off a terminal the items come back as they are, without even a
    generator in between: the replay's inner loop pays nothing for the bar.
    """
    if not (wanted() if enabled is None else enabled) or not total:
        return items
    return _counting(items, total, label)


def _counting(items: Iterable[T], total: int, label: str) -> Iterator[T]:
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        pending = 0
        for item in items:
            yield item
            pending += 1
            if pending == _CHUNK:
                bar.update(pending)
                pending = 0
        bar.update(pending)


def replay_with_progress(
    store: HistoryStore,
    policy: Policy,
    selection: Selection,
    play: Play | None = None,
    diffs: DiffReader | None = None,
) -> ReplayResult:
    """:func:`~.replay.replay`, with a bar on a terminal (``diffs``: a change's diff)."""
    selection = selection.of_history(store.builders())
    # An engine plays out culprit finding, which copies failing builds
    # with their logs: it is fed them.
    builders, builds, evidence = select_builds(store, selection, policy, steps=play is not None)
    return replay_builds(
        counted(builds, store.count_builds(), "Replaying"),
        policy,
        selection,
        builders,
        play,
        evidence=evidence,
        diffs=diffs,
    )


def pull_with_progress(
    url: str,
    history: Path | None,
    selection: Selection,
    concurrency: int,
    evidence_depth: int | None = EVIDENCE_DEPTH,
) -> tuple[Path, PullStats]:
    """:func:`~simulator.history.pull_file.pull_into`, with a bar on a terminal.

    The bar appears with the first progress report, which says how many
    builds there are to pull.
    """
    # Imported here: only a pull needs the REST client.
    from simulator.history.pull_file import pull_into

    bar: Any = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Pulling builds", file=sys.stderr)
            bar.__enter__()
        bar.update(min(done, total) - bar.pos)

    try:
        return pull_into(
            url,
            history,
            since=selection.since,
            selection=selection.watched,
            concurrency=concurrency,
            evidence_depth=evidence_depth,
            progress=advance if wanted() else None,
        )
    finally:
        if bar is not None:
            bar.render_finish()


def sweep_with_progress(
    store: HistoryStore,
    base: Policy,
    selection: Selection,
    axes: Sequence[Axis],
    methods: Methods | None = None,
) -> SweepResult:
    """Sweep the selection in its one pass over the history, with a bar.

    ``methods``: the machine's settings not swept (the daily cap, for one).
    """
    combos = combinations(axes, base, base_methods=methods)
    selection = selection.of_history(store.builders())
    steps = any(combo.methods.any for combo in combos)
    builders, lazy, evidence = select_builds(store, selection, base, steps=steps)
    builds = counted(lazy, store.count_builds(), "Sweeping")
    # Rows are scored on breakages and their culprits; only the culprit
    # finding methods read every build's cause.
    labels = store.labels(causes=steps) if store.has_labels() else None
    return run_sweep(builds, builders, selection, combos, labels, evidence=evidence)
