"""A builder's tags and selection, refreshed when the master's configuration changes.

The tracker reads a builder's tags when it first sees it; a reconfiguration
may tag it anew (say ``unstable``) or change which builders the reporter
watches.  Two things tell the reporter so, and both end in
:meth:`.Pipeline.note_builder`, which gives the tracker the new tags
(:meth:`~buildbot_revert.core.tracker.StreakTracker.retag`) and recomputes
the selection:

- the master's ``('builders', None, 'update')`` event, sent when a
  reconfiguration changes a builder's tags or description, whether or not
  the reporter's own arguments changed (an unchanged reporter is not
  reconfigured at all);
- the reporter's own reconfiguration, which re-reads every builder (its
  selection options may have changed; Buildbot reconfigures the builders
  before the services, so their tags are current by then).

Both run behind the reporter's lock, so a builder is retagged between two
builds, never while one is fed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from buildbot_revert.plugin.pipeline import Pipeline
from buildbot_revert.plugin.ports import Consumer, MessageQueue

BUILDER_UPDATED = ("builders", None, "update")


class BuilderUpdates:
    """Keeps the pipeline's builders as the master's configuration has them (see the module)."""

    def __init__(
        self,
        pipeline: Pipeline,
        lock: defer.DeferredLock,
        background: Callable[[defer.Deferred[Any], str], None],
    ) -> None:
        self.pipeline = pipeline
        self.lock = lock
        # The reporter's: runs a Deferred on its own, logging its failure.
        self.background = background
        self._consumer: Consumer | None = None

    async def start(self, mq: MessageQueue) -> None:
        """Listen to the master's builder updates."""
        self._consumer = await mq.startConsuming(self._on_update, BUILDER_UPDATED)

    async def stop(self) -> None:
        """Stop listening."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            # Buildbot's queue references return a Deferred or None.
            await defer.maybeDeferred(consumer.stopConsuming)

    def _on_update(self, key: tuple[str, ...], msg: Mapping[str, Any]) -> None:
        # Returning at once keeps the master's event delivery from waiting on us.
        self.background(self.lock.run(self.note, msg), "noting a builder's new tags")

    def refresh(self) -> None:
        """After a reconfiguration: every builder read again, in the background."""
        self.background(
            self.lock.run(lambda: defer.Deferred.fromCoroutine(self._refresh())),
            "refreshing the builders' tags",
        )

    async def _refresh(self) -> None:
        hands = self.pipeline.hands
        if hands is None:
            return
        for row in await hands.gatherer.builder_rows():
            self.note(row)

    def note(self, row: Mapping[str, Any]) -> None:
        """One builder as the data API gives it (an update event's message is one)."""
        hands, builderid, name = self.pipeline.hands, row.get("builderid"), row.get("name")
        if hands is None or not isinstance(builderid, int) or not isinstance(name, str):
            return
        tags = [tag for tag in row.get("tags") or () if isinstance(tag, str)]
        builder = hands.gatherer.learn_builder(builderid, name, tags)
        self.pipeline.note_builder(builderid, builder)
