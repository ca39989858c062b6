"""``RevertReporter``: the Buildbot service that watches builds and proposes reverts.

Thin by design: a Buildbot service that wires its collaborators
(:class:`~.wiring.Wiring`, on every (re)configuration) and hands every
finished build (the ``('builds', None, 'finished')`` event Buildbot's own
reporters consume) to one :class:`~.pipeline.Pipeline`, which feeds the
tracker and carries out what the core's post-verdict machine decides.
Builds are handled one at a time, in the order they finished, behind a
``DeferredLock``: the tracker needs completion order, and the event consumer
returns at once so the master never waits for the reporter.  Any error while
handling one build is logged with ``log.err`` and the next build is handled
as usual.  Besides the builds it runs two loops: the filer's periodic check
(grace deadlines, rows to retry, revert PRs to follow) and, with
verification or bisection on, the machine's clock (requested builds that
never ran).

On start (in the background: the master does not wait, the builds that
finish meanwhile wait behind the lock, and ``ready`` fires when it is done)
it creates its tables if needed, restores the tracker's memory
(:mod:`.memory`: the snapshot it saved, then the builds that completed
since, whose verdicts it acts on as if it had seen them live), or, with no
usable snapshot, rebuilds it from the master's builds of the policy's
``memory_horizon`` (acting on nothing new: those builds were before its
time), reading them in batches through the master's database
(:mod:`.history`); either way the tracker knows every revision the ledger
holds.  It then resolves ``filing`` rows its previous process left behind.
It saves the memory every :data:`SAVE_EVERY` builds (or :data:`SAVE_AFTER`
seconds) and when it stops, as versioned JSON (:mod:`.memory`).

The GitHub token is rendered on every (re)configuration (:mod:`.wiring`),
only when the mode needs it.  (A restart is the sure way to supply one:
Buildbot reconfigures ``c['services']`` before ``c['secretsProviders']``,
and ``SecretInAFile`` reads its files only when its arguments change.)

Example (``master.cfg``)::

    from buildbot.plugins import reporters, util
    c['services'].append(reporters.RevertReporter(
        repo='python/cpython', token=util.Secret('github_token'),
        tags=['stable'], mode='revert', revert_labels=[':hammer: test-with-buildbots']))
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from buildbot import config as bb_config
from buildbot.util import service
from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.python import log
from twisted.python.failure import Failure

from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from buildbot_revert.logline import say
from buildbot_revert.plugin import history
from buildbot_revert.plugin.builder_updates import BuilderUpdates
from buildbot_revert.plugin.config import Mode, Settings, SettingsError, parse_arguments
from buildbot_revert.plugin.memory import OVERLAP, CatchUp, Snapshot
from buildbot_revert.plugin.multimaster import split_streaks_warning
from buildbot_revert.plugin.pipeline import Hands, Pipeline
from buildbot_revert.plugin.ports import Clock, Consumer
from buildbot_revert.plugin.wiring import Parts, Wiring

FINISHED = ("builds", None, "finished")
# A new change's event carries the change as the data API returns it.
NEW_CHANGE = ("changes", None, "new")
# The tracker's memory is saved after this many builds, or this many seconds.
SAVE_EVERY = 500
SAVE_AFTER = 600.0


# Buildbot ships no type information, so BuildbotService is Any to mypy.
class RevertReporter(service.BuildbotService):  # type: ignore[misc]
    """Proposes revert pull requests for changes that clearly broke a builder."""

    name = "RevertReporter"
    # No ``secrets = ["token"]``: Buildbot would render the token before every
    # reconfigService, even in dry-run, and a missing secret would stop the
    # master with a traceback.  reconfigService renders it (.wiring).

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: Settings | None = None
        # The collaborators of the current configuration (.wiring).
        self.parts: Parts | None = None
        self._wiring: Wiring | None = None
        self.pipeline = Pipeline(None, lambda: 0.0, self._build_url, self._background)
        self._consumer: Consumer | None = None
        self._change_consumer: Consumer | None = None
        self._lock = defer.DeferredLock()
        # A reconfiguration's new tags and selection (.builder_updates).
        self._builders = BuilderUpdates(self.pipeline, self._lock, self._background)
        self._replayed: set[int] = set()
        self._pending_loop: task.LoopingCall | None = None
        # Looks for verification and bisection builds that never ran.
        self._overdue_loop: task.LoopingCall | None = None
        self._filing: set[defer.Deferred[Any]] = set()
        # Where the next snapshot's catch-up starts.
        self._catch_up = CatchUp()
        self._unsaved = 0
        self._saved_at = 0.0
        self._checking = False
        # Fires once the tracker's memory is restored or rebuilt (see startService).
        self.ready: defer.Deferred[Any] = defer.succeed(None)
        super().__init__(*args, **kwargs)

    # -- the pipeline's tracker and verdicts ----------------------------------------

    @property
    def tracker(self) -> StreakTracker | None:
        return self.pipeline.tracker

    @tracker.setter
    def tracker(self, tracker: StreakTracker | None) -> None:
        self.pipeline.tracker = tracker

    @property
    def verdicts(self) -> list[Verdict]:
        """The latest verdicts logged (a thousand at most)."""
        return self.pipeline.verdicts

    # -- configuration ----------------------------------------------------------

    def checkConfig(self, *args: Any, **kwargs: Any) -> None:
        name = kwargs.pop("name", None)
        if name is not None:
            self.name = name
        try:
            parse_arguments(args, kwargs, also=("name",))
        except SettingsError as exc:
            bb_config.error(f"RevertReporter: {exc}")

    def getConfigDict(self) -> dict[str, Any]:
        """Buildbot's record of the arguments, without the token.

        Buildbot logs it when a reconfiguration fails; a token given as a
        plain string must not reach the log that way.
        """
        config = dict(super().getConfigDict())
        args = list(config.get("args") or ())
        if len(args) > 1 and args[1] is not None:
            args[1] = _HIDDEN
        kwargs = dict(config.get("kwargs") or {})
        if kwargs.get("token") is not None:
            kwargs["token"] = _HIDDEN
        if kwargs.get("webhooks"):
            # Webhook URLs hold their secret in the path or the credentials.
            kwargs["webhooks"] = "<webhooks, hidden>"
        config["args"], config["kwargs"] = tuple(args), kwargs
        return config

    def reconfigService(self, *args: Any, **kwargs: Any) -> defer.Deferred[None]:
        """Buildbot's hook: a Deferred of :meth:`_reconfigure`."""
        return defer.Deferred.fromCoroutine(self._reconfigure(*args, **kwargs))

    async def _reconfigure(self, *args: Any, **kwargs: Any) -> None:
        """New arguments: parts wired anew, the pipeline configured, the loops (re)started."""
        kwargs.pop("name", None)
        settings = parse_arguments(args, kwargs)
        self.settings = settings
        if self._wiring is None:
            self._wiring = Wiring(
                self.master,
                self._reactor(),
                self.renderSecrets,
                self._memory_owner(),
                self._build_url,
            )
        self.parts = await self._wiring.wire(settings, self.parts)
        pipeline = self.pipeline
        pipeline.master, pipeline.clock = self.master, self._reactor().seconds
        parts = self.parts
        hands = Hands(
            gatherer=parts.gatherer,
            filer=parts.filer,
            follow_up=parts.follow_up,
            decisions=parts.decisions,
            held=parts.held,
            diffs=parts.diffs,
        )
        pipeline.configure(settings, hands)
        if self.running:
            self._builders.refresh()
        if self.tracker is not None:
            self._schedule_overdue()
        if self.tracker is not None and self.tracker.policy != settings.policy:
            # A new policy needs a fresh tracker, rebuilt from recent history.
            self.tracker = None
            if self.running:
                await self._locked(self._start_tracker)
        self._schedule_pending()

    def _reactor(self) -> Clock:
        """The master's reactor (a ``task.Clock`` in timing tests)."""
        reactor: Clock = getattr(self.master, "reactor", None) or _global_reactor()
        return reactor

    def _render_token(self, settings: Settings) -> defer.Deferred[str | None]:
        """The token as a string, or None after one line in the log (see .wiring)."""
        if self._wiring is None:
            self._wiring = Wiring(
                self.master, self._reactor(), self.renderSecrets, "", self._build_url
            )
        return defer.Deferred.fromCoroutine(self._wiring.render_token(settings))

    def _build_url(self, builder: str, number: int) -> str | None:
        base = getattr(getattr(self.master, "config", None), "buildbotURL", None)
        builderid = self.pipeline.builder_ids.get(builder)
        if not isinstance(base, str) or not base or builderid is None:
            return None
        return f"{base.rstrip('/')}/#/builders/{builderid}/builds/{number}"

    # -- lifecycle ------------------------------------------------------------------

    def startService(self) -> defer.Deferred[None]:
        """Buildbot's hook: a Deferred of :meth:`_start`."""
        return defer.Deferred.fromCoroutine(self._start())

    async def _start(self) -> None:
        """Subscribe to the master's events; restore the tracker in the background."""
        await super().startService()
        # Several masters without a shared message queue: say once that streaks may be split.
        warning = split_streaks_warning(getattr(self.master, "config", None))
        if warning is not None:
            say(warning)
        # Subscribe before replaying, so no build finishes unseen in between;
        # the lock makes the events wait for the replay.
        self._consumer = await self.master.mq.startConsuming(self._on_finished, FINISHED)
        self._change_consumer = await self.master.mq.startConsuming(self._on_change, NEW_CHANGE)
        await self._builders.start(self.master.mq)
        # The master does not wait for the memory: a rebuild from a month of
        # builds takes minutes, and Buildbot starts its schedulers and lets
        # workers in only once every service has started.  Builds that finish
        # meanwhile wait behind the lock; ``ready`` fires when it is rebuilt.
        self.ready = self._locked(self._start_tracker)
        self.ready.addCallback(lambda _: self._started())
        self._background(self.ready, "starting the tracker")

    def _started(self) -> None:
        self._schedule_pending()
        self._schedule_overdue()
        # Filing rows the previous process left behind, and grace periods
        # that ended while the master was down (in the background: GitHub
        # may be slow, the master need not wait).
        self._background(
            defer.Deferred.fromCoroutine(self._check_pending(starting=True)),
            "checking pending reverts",
        )

    def stopService(self) -> defer.Deferred[None]:
        """Buildbot's hook: a Deferred of :meth:`_stop`."""
        return defer.Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        """Stop the loops and consumers, let work in flight finish, save the memory."""
        if not self.running:
            return
        for consumer in (self._consumer, self._change_consumer):
            if consumer is not None:
                # Buildbot's queue references return a Deferred or None.
                await defer.maybeDeferred(consumer.stopConsuming)
        self._consumer = self._change_consumer = None
        await self._builders.stop()
        if self._pending_loop is not None and self._pending_loop.running:
            self._pending_loop.stop()
        if self._overdue_loop is not None and self._overdue_loop.running:
            self._overdue_loop.stop()
        # Let the build being handled, and any filing in flight, finish;
        # then remember what the tracker knows.
        await self._lock.run(lambda: None)
        await defer.DeferredList(list(self._filing))
        await self._locked(self._save_memory)
        pool = self._wiring.http_pool if self._wiring is not None else None
        if pool is not None:
            # twisted.web.client has no annotations for HTTPConnectionPool.
            await pool.closeCachedConnections()  # type: ignore[no-untyped-call]
        await super().stopService()

    async def _start_tracker(self) -> None:
        parts = self.parts
        assert self.settings is not None and parts is not None
        try:
            await parts.ledger.create()
            await parts.memory.create()
            await parts.decisions.create()
            await parts.held.create()
            # Before the replay: a verification build that finished while
            # the master was down completes the verdict it was held for.
            await self.pipeline.restore()
            proposed = await parts.ledger.revisions()
            snapshot = await self._load_memory()
            if snapshot is not None:
                self.tracker = snapshot.tracker
                pipeline = self.pipeline
                self.tracker.attach(
                    pipeline.watched.__contains__, pipeline.builder_tags, pipeline.read_diff
                )
                self.tracker.also_proposed(proposed)
                self._catch_up = CatchUp.of(snapshot)
                since = snapshot.last_complete_at - OVERLAP
                skip = snapshot.recent
                how = f"restored the memory of {snapshot.builds} build(s)"
            else:
                self.tracker = self._new_tracker(proposed)
                self._catch_up = CatchUp()
                since = self._reactor().seconds() - self.settings.policy.memory_horizon
                skip = frozenset()
                how = "no saved memory: rebuilt it from the master's builds"
            act = snapshot is not None  # what the last process may not have acted on
            rows = await history.builds_since(self.master, since)  # in batches
            reader = history.Reader(self.master, parts.gatherer, rows)
            replayed = 0
            while (batch := (await reader.next())) is not None:
                replayed += await history.replay_batch(
                    self._reactor(),
                    batch,
                    lambda row: self._feed(row, act=act),
                    seen=self._replayed,
                    skip=skip,
                    decisions=parts.decisions,
                )
            say(
                f"buildbot-revert: {how}; replayed {replayed} build(s); "
                f"{len(proposed)} revision(s) in the ledger; red: {self.tracker.red_builders()}"
            )
            await self._save_memory()
            await self.pipeline.resume()
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not rebuild the tracker")
            if self.tracker is None:
                self.tracker = self._new_tracker(())

    async def _load_memory(self) -> Snapshot | None:
        assert self.settings is not None and self.parts is not None
        try:
            snapshot: Snapshot | None = await self.parts.memory.load(
                self._memory_owner(), self.settings.policy
            )
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: the saved memory could not be read; rebuilding")
            return None
        return snapshot

    def _memory_owner(self) -> str:
        master = str(getattr(self.master, "name", None) or "")[:255]
        return f"{master}/{self.name}"[:255]

    async def _save_memory(self) -> None:
        """Save the tracker's memory (call with the lock held: nothing feeds it meanwhile).

        Pickled in the database's thread (:meth:`.Memory.save`): the lock,
        held until the row is written, keeps the builds that finish
        meanwhile from feeding it.
        """
        if self.tracker is None or self.parts is None or self.settings is None:
            return
        now = self._reactor().seconds()
        # A save that fails is tried again at the next interval, not every build.
        self._unsaved, self._saved_at = 0, now
        try:
            await self.parts.memory.save(
                self._memory_owner(), self.settings.policy, self.tracker, self._catch_up, now
            )
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not save the tracker's memory")

    def _new_tracker(self, proposed: Iterable[str]) -> StreakTracker:
        assert self.settings is not None
        # Every builder is fed: the ones outside the selection are evidence
        # for the guards (what fails where, which workers agree), exactly as
        # the simulator replays them; only the selected ones may propose.
        # Its tags_of reads the tags gathered with each build, before the
        # build is fed (asked when first seen; Pipeline.note_builder retags).
        return StreakTracker(
            self.settings.policy,
            proposed=proposed,
            watched=self.pipeline.watched.__contains__,
            tags_of=self.pipeline.builder_tags,
            diffs=self.pipeline.read_diff,
        )

    def _schedule_pending(self) -> None:
        settings = self.settings
        if settings is None or not self.running or settings.mode is Mode.DRY_RUN:
            return
        if self.parts is None or self.parts.filer is None:
            return
        if self._pending_loop is not None and self._pending_loop.running:
            return
        grace = settings.machine.grace_period
        interval = 60.0 if grace <= 0 else min(60.0, max(1.0, grace / 4))
        interval = min(interval, settings.follow_interval)
        self._pending_loop = task.LoopingCall(
            lambda: defer.Deferred.fromCoroutine(self._check_pending())
        )
        self._pending_loop.clock = IReactorTime(self._reactor())
        self._pending_loop.start(interval, now=False)

    def _schedule_overdue(self) -> None:
        """Look for requested builds that never ran, a few times per timeout."""
        settings = self.settings
        if settings is None or not self.running:
            return
        if self._overdue_loop is not None and self._overdue_loop.running:
            self._overdue_loop.stop()
        if not self.pipeline.waits:
            return
        interval = min(60.0, max(1.0, settings.machine.forced_build_timeout / 4))
        self._overdue_loop = task.LoopingCall(lambda: self._locked(self._check_overdue))
        self._overdue_loop.clock = IReactorTime(self._reactor())
        self._overdue_loop.start(interval, now=False)

    async def _check_overdue(self) -> None:
        """The machine's clock: decline what waits for builds that never ran."""
        try:
            await self.pipeline.check_overdue()
        except Exception as exc:  # the loop must go on
            _log_failure(exc, "buildbot-revert: checking for forced builds that never ran failed")

    async def _check_pending(self, starting: bool = False) -> None:
        """The filer's periodic check, outside the build lock (it may wait on GitHub).

        The grace rule reads only facts dated up to each deadline, recorded
        under the lock as builds finish, so deciding while builds are fed
        does not change a decision.
        """
        filer = None if self.parts is None else self.parts.filer
        if filer is None or self._checking:
            return
        self._checking = True
        try:
            await filer.check_pending(starting=starting)
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: checking pending reverts failed")
        try:
            # Read again: a reconfiguration meanwhile may have wired new parts.
            follow_up = None if self.parts is None else self.parts.follow_up
            if follow_up is not None:
                await follow_up.check()
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: following revert PRs failed")
        finally:
            self._checking = False

    # -- events ---------------------------------------------------------------------

    def _on_finished(self, key: tuple[str, ...], msg: dict[str, Any]) -> None:
        # Returning at once keeps the master's event delivery from waiting on us.
        self._locked(lambda: self._handle(msg))

    def _on_change(self, key: tuple[str, ...], msg: dict[str, Any]) -> None:
        """A new change: known before the first build of it finishes.

        Its first build's blamelist would otherwise read it from the
        database, a second trip to the master's database thread for that
        build.  Outside the lock: the gatherer's cache of changes is the
        same whichever order it is filled in, and a change the reporter
        missed (one added while it was stopped, or evicted) is read then.
        """
        if self.parts is not None:
            try:
                self.parts.gatherer.remember(msg)
            except Exception as exc:  # a malformed event must not reach the master's mq
                _log_failure(exc, "buildbot-revert: could not read a new change's event")

    async def _handle(self, msg: dict[str, Any]) -> None:
        try:
            if msg.get("buildid") in self._replayed:
                self._replayed.discard(msg["buildid"])
                return
            if self.tracker is None:
                return
            await self._feed(msg, act=True)
            self._unsaved += 1
            if (
                self._unsaved >= SAVE_EVERY
                or self._reactor().seconds() - self._saved_at >= SAVE_AFTER
            ):
                await self._save_memory()
        except Exception as exc:
            _log_failure(exc, f"buildbot-revert: error handling build {msg.get('buildid')}")

    async def _feed(self, msg: dict[str, Any], *, act: bool) -> None:
        """Hand one finished build to the pipeline; note it for the memory's catch-up."""
        build = await self.pipeline.feed(msg, act=act)
        if build is not None:
            self._catch_up.note(build.completed_at, msg["buildid"])

    def _locked(self, work: Callable[[], Coroutine[Any, Any, None]]) -> defer.Deferred[None]:
        """Run ``work`` behind the build lock (one build, or one check, at a time)."""
        return self._lock.run(lambda: defer.Deferred.fromCoroutine(work()))

    def _background(self, d: defer.Deferred[Any], what: str) -> None:
        """Run ``d`` on its own; stopping the service waits for it."""
        self._filing.add(d)

        def done(result: object) -> None:
            self._filing.discard(d)
            if isinstance(result, Failure):
                _log_failure(result, f"buildbot-revert: {what} failed")

        d.addBoth(done)


_HIDDEN = "<the GitHub token, hidden>"


def _log_failure(failure: BaseException | Failure, why: str) -> None:
    """``log.err`` with a traceback, for errors that are bugs or surprises."""
    # twisted.python.log.err has no annotations.
    log.err(failure, why)  # type: ignore[no-untyped-call]


def _global_reactor() -> Clock:
    from twisted.internet import reactor

    clock: Clock = reactor
    return clock
