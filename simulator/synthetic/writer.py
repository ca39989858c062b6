"""Writes a generated history into a SQLite file, atomically.

Everything goes into a temporary file beside the target through
:class:`~simulator.history.store.HistoryStore`, which is renamed over the
target only when complete: an error or an interruption leaves nothing
half-written.  Besides builders, changes and builds, the file holds the
ground truth: a label per non-green build, and per (breaking change,
builder) when its first red build and its first fixed build completed.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from buildbot_revert.core.model import Builder, Change, Result
from simulator.history.store import HistoryStore
from simulator.history.store_writes import BulkBuildRow
from simulator.synthetic.branches import BranchBuilder
from simulator.synthetic.breakages import Breakage
from simulator.synthetic.builds import BuildRecord
from simulator.synthetic.changes import ChangeRec, landing_order

# Builds are written (and progress reported) in batches of this many.
PROGRESS_EVERY = 10_000
RESULT_NAMES = {int(r): r.name for r in Result}


@dataclass(frozen=True)
class GenerationStats:
    """What :func:`simulator.synthetic.generator.generate` wrote."""

    path: Path
    builders: int
    changes: int
    builds: int
    breaking_changes: int
    breakages: int  # (change, builder) pairs labelled as broken
    results: dict[str, int]  # result name -> builds
    causes: dict[str, int]  # label cause -> builds


@dataclass(frozen=True)
class History:
    """Everything generated, ready to be written."""

    builders: list[BranchBuilder]
    changes: dict[str, list[ChangeRec]]  # per branch, in landing order
    breakages: list[Breakage]
    builds: list[BuildRecord]  # in completion order
    meta: dict[str, str]


def write_atomically(
    path: Path,
    history: History,
    *,
    horizon: float | None,
    progress: Callable[[int, int], None] | None,
) -> GenerationStats:
    """Write ``history`` to ``path``; drop the log tails of builds completed before ``horizon``.

    ``progress(done, total)`` is called as builds are written; if it raises,
    nothing is left at ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # Named like "<name>-XXXX.tmp" so that the history/ ignore rules cover it.
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        tmp.unlink()  # HistoryStore creates the file itself
        tally = _write(tmp, history, horizon, progress)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return GenerationStats(
        path=path,
        builders=len(history.builders),
        changes=sum(len(cs) for cs in history.changes.values()),
        builds=len(history.builds),
        breaking_changes=len({breakage_id for breakage_id, _ in tally.broken_at}),
        breakages=len(tally.broken_at),
        results=tally.result_names(),
        causes=dict(sorted(tally.causes.items())),
    )


@dataclass
class _Tally:
    """What the writer counts as it goes."""

    results: Counter[int] = field(default_factory=Counter)  # builds per result
    causes: Counter[str] = field(default_factory=Counter)  # builds per label cause
    # Per (breakage id, builder index): when its first red build completed,
    # and its first build with the fix after that.
    broken_at: dict[tuple[int, int], float] = field(default_factory=dict)
    fixed_at: dict[tuple[int, int], float] = field(default_factory=dict)

    def count(
        self, records: list[BuildRecord], ranges: dict[int, list[tuple[Breakage, int, int]]]
    ) -> None:
        """Count ``records``; ``ranges`` are each builder's breakages with their revisions."""
        self.results.update(record.result for record in records)
        self.causes.update(record.cause for record in records if record.cause is not None)
        for record in records:
            if record.builder in ranges:
                self._label(record, ranges[record.builder])

    def _label(self, record: BuildRecord, ranges: list[tuple[Breakage, int, int]]) -> None:
        """Note when ``record`` is its builder's first red or fixed build of each breakage."""
        rev = record.last - 1
        for breakage, lo, hi in ranges:
            key = (breakage.id, record.builder)
            if lo <= rev < hi and record.result == Result.FAILURE:
                self.broken_at.setdefault(key, record.completed)
            elif rev >= hi and key in self.broken_at:
                self.fixed_at.setdefault(key, record.completed)

    def result_names(self) -> dict[str, int]:
        """Builds per result name, by name."""
        return dict(sorted((RESULT_NAMES[r], n) for r, n in self.results.items()))


@dataclass
class _Rows:
    """A batch of builds' rows, written with one ``executemany`` per table."""

    builds: list[BulkBuildRow] = field(default_factory=list)
    steps: list[tuple[int, int, str, int, str | None]] = field(default_factory=list)
    labels: list[tuple[int, str, int | None]] = field(default_factory=list)

    def flush(self, store: HistoryStore) -> None:
        store.writer.add_builds_bulk(self.builds, self.steps)
        store.writer.add_build_labels(self.labels)


def _write(
    path: Path,
    history: History,
    horizon: float | None,
    progress: Callable[[int, int], None] | None,
) -> _Tally:
    store = HistoryStore(path, create=True)
    try:
        with store.writer.bulk_load():
            builder_ids = [
                store.writer.add_builder(Builder(b.name, b.tags)) for b in history.builders
            ]
            change_ids = _add_changes(store, history.changes)
            tally = _add_builds(store, history, builder_ids, change_ids, horizon, progress)
            for (breakage_id, builder), when in sorted(tally.broken_at.items()):
                breakage = history.breakages[breakage_id]
                culprit = breakage.culprit
                store.writer.add_breakage(
                    change_ids[culprit.branch][culprit.index],
                    builder_ids[builder],
                    when,
                    tally.fixed_at.get((breakage_id, builder)),
                    breakage.fixed_by,
                )
            for name, value in history.meta.items():
                store.set_meta(name, value)
    finally:
        store.close()
    return tally


def _add_changes(store: HistoryStore, changes: dict[str, list[ChangeRec]]) -> dict[str, list[int]]:
    """Store every branch's changes; their ids per branch, by index."""
    change_ids = {branch: [0] * len(on_branch) for branch, on_branch in changes.items()}
    # Ids in landing order over all branches.
    everything = sorted((c for on_branch in changes.values() for c in on_branch), key=landing_order)
    for c in everything:
        change_ids[c.branch][c.index] = store.writer.add_change(_as_change(c))
    return change_ids


def _add_builds(
    store: HistoryStore,
    history: History,
    builder_ids: list[int],
    change_ids: dict[str, list[int]],
    horizon: float | None,
    progress: Callable[[int, int], None] | None,
) -> _Tally:
    """Store the builds, their blamelists, failed steps and labels; count them."""
    ranges: dict[int, list[tuple[Breakage, int, int]]] = {}
    index_of = {b.name: i for i, b in enumerate(history.builders)}
    for breakage in history.breakages:
        for name in breakage.builders:
            if name in index_of:
                ranges.setdefault(index_of[name], []).append((breakage, *breakage.revisions))
    columns = _BuilderColumns(history.builders, builder_ids, change_ids)
    tally, total = _Tally(), len(history.builds)
    for done in range(0, total, PROGRESS_EVERY):
        batch = history.builds[done : done + PROGRESS_EVERY]
        # A fresh file: build ids are simply the completion order.
        columns.rows(batch, done + 1, horizon).flush(store)
        tally.count(batch, ranges)
        if progress is not None:
            progress(done + len(batch), total)
    return tally


class _BuilderColumns:
    """What a build's rows take from its builder, looked up once per builder."""

    def __init__(
        self,
        builders: list[BranchBuilder],
        builder_ids: list[int],
        change_ids: dict[str, list[int]],
    ) -> None:
        # Each branch's change ids as the blamelist column writes them.
        ids_text = {branch: [str(i) for i in ids] for branch, ids in change_ids.items()}
        self.ids = [change_ids.get(b.branch, []) for b in builders]
        # (builder id, worker, branch, change ids as text: None when scrubbed)
        self.fixed = [
            (
                builder_ids[i],
                b.spec.worker,
                b.branch,
                # A scrubbed builder's builds hold no change.
                None if b.scrubbed else ids_text.get(b.branch, []),
            )
            for i, b in enumerate(builders)
        ]

    def rows(self, records: list[BuildRecord], first_id: int, horizon: float | None) -> _Rows:
        """The rows of ``records``, whose build ids count from ``first_id``."""
        rows, fixed = _Rows(), self.fixed
        for build_id, record in enumerate(records, start=first_id):
            builder_id, worker, branch, ids_text = fixed[record.builder]
            # Same as blamelist_column: the ids comma-separated, None for none.
            blamed = None if ids_text is None else ",".join(ids_text[record.first : record.last])
            rows.builds.append(
                (
                    build_id,
                    builder_id,
                    record.number,
                    record.result,
                    record.started,
                    record.completed,
                    worker,
                    # The sourcestamp's branch: main, 3.13..., refs/pull/N/merge.
                    record.branch or branch,
                    blamed or None,
                )
            )
            # Two builds in three have no failed step: no generator made for them.
            if record.steps:
                keep_logs = horizon is None or record.completed >= horizon
                rows.steps.extend(
                    (build_id, i, step.name, step.result, step.log_tail if keep_logs else None)
                    for i, step in enumerate(record.steps)
                )
            if record.cause is not None:
                ids = self.ids[record.builder]
                culprit_id = ids[record.cause_change] if record.cause_change is not None else None
                rows.labels.append((build_id, record.cause, culprit_id))
        return rows


def _as_change(c: ChangeRec) -> Change:
    return Change(c.revision, c.author, c.title, c.when, c.pr_number, c.message, c.files, c.branch)
