"""``RevertReporter``: the Buildbot service that watches builds and proposes reverts.

Thin by design.  On every finished build (the ``('builds', None,
'finished')`` event Buildbot's own reporters consume) it asks
:class:`~.gather.Gatherer` for the core's record of the build, feeds the
shared :class:`~buildbot_revert.core.tracker.StreakTracker`, logs every
verdict, and hands REVERT verdicts to :class:`~.filing.Filer`.  Builds are
handled one at a time, in the order they finished, behind a
``DeferredLock``: the tracker needs completion order, and the event consumer
returns at once so the master never waits for the reporter.  Any error while
handling one build is logged with ``log.err`` and the next build is handled
as usual.

Every event of a watched builder goes to the filer, which records what it
tells a grace decision in the ledger while the lock is held (so a deadline
checked later sees every build completed before it) and acts on GitHub in
the background; its verdicts and streak ends are also kept, once per
streak, in :mod:`.decisions` for the dashboard (:mod:`buildbot_revert.dashboard`).

On start (in the background: the master does not wait, the builds that
finish meanwhile wait behind the lock, and ``ready`` fires when it is done)
it creates its tables if needed, restores the tracker's memory
(:mod:`.memory`: the snapshot it saved, then the builds that completed
since, whose verdicts it acts on as if it had seen them live), or, with no
usable snapshot, rebuilds it from the master's builds of the policy's
``memory_horizon`` (acting on nothing new: those builds were before its
time); either way the tracker knows every revision the ledger holds.  It
then resolves ``filing`` rows its previous process left behind.  It saves
the memory every :data:`SAVE_EVERY` builds (or :data:`SAVE_AFTER` seconds)
and when it stops, pickled in the database's thread: the reactor's thread
never serialises the tracker (it is the master's, and the state grows with
the builders and the guards' windows).

The GitHub token is rendered here, on every (re)configuration, and only when
the mode needs it (``comment`` or ``revert``): a dry run starts without one.
A token that cannot be rendered (say the secret is missing) is one line in
the log naming the secret, never a traceback and never the value; the
reporter then decides and logs as usual but does nothing on GitHub until a
later (re)configuration renders the token.  (A restart is the sure way:
Buildbot reconfigures ``c['services']`` before ``c['secretsProviders']``,
and ``SecretInAFile`` reads its files only when its arguments change.)

Example (``master.cfg``)::

    from buildbot.plugins import reporters, util
    c['services'].append(reporters.RevertReporter(
        repo='python/cpython', token=util.Secret('github_token'),
        tags=['stable'], mode='revert', revert_labels=[':hammer: test-with-buildbots']))
"""

from __future__ import annotations

from typing import Any

from buildbot import config as bb_config
from buildbot.util import service
from treq.client import HTTPClient
from twisted.internet import defer, task
from twisted.python import log
from twisted.python.failure import Failure
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.core.model import Build
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import PROPOSING, Streak, Verdict
from buildbot_revert.core.verification import Judgement, wants_verification
from buildbot_revert.github import GitHubClient
from buildbot_revert.plugin import history
from buildbot_revert.plugin.bisection import Bisector, builder_slots
from buildbot_revert.plugin.config import (
    Mode,
    Settings,
    SettingsError,
    describe_token,
    parse_arguments,
    rendered_token,
)
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.filing import Filer
from buildbot_revert.plugin.follow_up import FollowUp
from buildbot_revert.plugin.gather import Gatherer
from buildbot_revert.plugin.held import HeldStore
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.memory import OVERLAP, CatchUp, Memory, Snapshot
from buildbot_revert.plugin.multimaster import split_streaks_warning
from buildbot_revert.plugin.notify import Notifier, Webhook
from buildbot_revert.plugin.notify.settings import public_part
from buildbot_revert.plugin.verification import BuiltRevisions, Verifier, verified

FINISHED = ("builds", None, "finished")
# A new change's event carries the change as the data API returns it.
NEW_CHANGE = ("changes", None, "new")
# The tracker's memory is saved after this many builds, or this many seconds.
SAVE_EVERY = 500
SAVE_AFTER = 600.0
# The daily caps count the builds requested in the last day.
DAY = 86400.0
# A replay lets the reactor run between slices of this many builds.
REPLAY_SLICE = 50
# A restarted reporter looks this far back for the builds its held verdicts
# requested before requesting any again.
RESUME_LOOK_BACK = 7 * DAY


# Buildbot ships no type information, so BuildbotService is Any to mypy.
class RevertReporter(service.BuildbotService):  # type: ignore[misc]
    """Proposes revert pull requests for changes that clearly broke a builder."""

    name = "RevertReporter"
    # No ``secrets = ["token"]``: Buildbot would render the token before every
    # reconfigService, even in dry-run, and a missing secret would stop the
    # master with a traceback.  reconfigService renders it (_render_token).

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: Settings | None = None
        self.tracker: StreakTracker | None = None
        self.gatherer: Gatherer | None = None
        self.ledger: Ledger | None = None
        self.filer: Filer | None = None
        # Follows filed revert PRs to their end; announces on webhooks (issue 16).
        self.follow_up: FollowUp | None = None
        self.notifier = Notifier()
        # Verification and bisection builds (settings.verification,
        # settings.bisection): None when off; what each builder last built green.
        self.verifier: Verifier | None = None
        self.bisector: Bisector | None = None
        self._revisions = BuiltRevisions()
        self.verdicts: list[Verdict] = []
        self._consumer: Any = None
        self._change_consumer: Any = None
        self._lock = defer.DeferredLock()
        self._replayed: set[int] = set()
        self._builder_ids: dict[str, int] = {}
        # Builders the selection (regex or names, tags) lets propose; others are evidence.
        self._watched: set[str] = set()
        # Every gathered builder's tags, which the tracker asks for (pull
        # requests, tolerated builders, docs builders).
        self._tags: dict[str, tuple[str, ...]] = {}
        self._pending_loop: task.LoopingCall | None = None
        # Looks for verification and bisection builds that never ran.
        self._overdue_loop: task.LoopingCall | None = None
        self._http_pool: HTTPConnectionPool | None = None
        self._filing: set[defer.Deferred[Any]] = set()
        self.memory: Memory | None = None
        # Held verdicts and bisections in flight, and the builds requested.
        self.held: HeldStore | None = None
        # Every verdict of a watched builder, for the dashboard (plugin.decisions).
        self.decisions: Decisions | None = None
        # Where the next snapshot's catch-up starts.
        self._catch_up = CatchUp()
        self._unsaved = 0
        self._saved_at = 0.0
        self._checking = False
        # Fires once the tracker's memory is restored or rebuilt (see startService).
        self.ready: defer.Deferred[Any] = defer.succeed(None)
        super().__init__(*args, **kwargs)

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

    @defer.inlineCallbacks
    def reconfigService(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("name", None)
        settings = parse_arguments(args, kwargs)
        self.settings = settings
        if self.gatherer is None:
            self.gatherer = Gatherer(self.master, settings.log_lines)
        else:
            self.gatherer.log_lines = settings.log_lines
            self.gatherer.forget_builders()
        if self.ledger is None:
            self.ledger = Ledger(self.master.db.pool.do)
        if self.memory is None:
            self.memory = Memory(self.master.db.pool.do)
        if self.decisions is None:
            self.decisions = Decisions(self.master.db.pool.do)
        if self.held is None:
            self.held = HeldStore(self.master.db.pool.do, self._memory_owner())
        client = None
        if settings.mode is Mode.DRY_RUN:
            log.msg(
                f"buildbot-revert: {settings.repo}, mode 'dry-run': verdicts are logged and "
                "proposed reverts recorded in the master's database; nothing is done on GitHub"
            )
        else:
            token = yield self._render_token(settings)
            if token is not None:
                client = self._client(settings, token)
                log.msg(
                    f"buildbot-revert: {settings.repo}, mode {settings.mode.value!r}: "
                    f"acting on GitHub with {describe_token(settings.token)}"
                )
        self.notifier = yield self._notifier(settings)
        # Without a client a mode that acts on GitHub has no hands: verdicts
        # are still logged, nothing is filed or recorded.
        self.filer = None
        self.follow_up = None
        if settings.mode is Mode.DRY_RUN or client is not None:
            self.filer = Filer(
                settings,
                self.ledger,
                client,
                clock=self._reactor(),
                master_name=self._master_name(),
                build_url=self._build_url,
                master_url=self._web_url(),
                notify=self.notifier.notify,
            )
        if client is not None:
            self.follow_up = FollowUp(
                settings,
                self.ledger,
                client,
                clock=self._reactor(),
                master_name=self._master_name(),
                build_url=self._build_url,
                notify=self.notifier.notify,
            )
        self.verifier = (
            Verifier(
                self.master,
                self.gatherer,
                self._builder_ids.get,
                self._build_url,
                self._revisions,
                store=self.held,
                clock=self._reactor().seconds,
            )
            if settings.verification
            else None
        )
        self.bisector = (
            Bisector(
                self.master,
                self.gatherer,
                settings.bisection,
                self._builder_ids.get,
                self._build_url,
                self._revisions,
                self._reactor().seconds,
                store=self.held,
                width=lambda builder: builder_slots(self.master, builder),
            )
            if settings.bisection is not None
            else None
        )
        if self.tracker is not None:
            # A reconfiguration makes new ones: they take back what is held.
            yield self._restore_held()
            self._schedule_overdue()
        if self.tracker is not None and self.tracker.policy != settings.policy:
            # A new policy needs a fresh tracker, rebuilt from recent history.
            self.tracker = None
            if self.running:
                yield self._lock.run(self._start_tracker)
        self._schedule_pending()

    def _reactor(self) -> Any:
        return getattr(self.master, "reactor", None) or _global_reactor()

    @defer.inlineCallbacks
    def _render_token(self, settings: Settings) -> Any:
        """The token as a string, or None after one line in the log saying why not.

        Neither the line nor anything else here ever holds the token's value.
        """
        what = describe_token(settings.token)
        try:
            value = yield self.renderSecrets(settings.token)
        except Exception as exc:
            problem = f"could not be rendered: {_one_line(exc)}"
        else:
            try:
                return rendered_token(value)
            except SettingsError as exc:
                problem = f"is unusable: {exc}"
        log.msg(
            f"buildbot-revert: {what} {problem}; mode {settings.mode.value!r} needs it, "
            "so nothing is done on GitHub until it is supplied and the master restarted"
        )
        return None

    def _client(self, settings: Settings, token: str) -> GitHubClient:
        reactor = self._reactor()
        return GitHubClient(self._http(), settings.api_url, settings.repo, token, clock=reactor)

    def _http(self) -> HTTPClient:
        """The master's HTTP client (treq on its reactor), shared by GitHub and the webhooks."""
        reactor = self._reactor()
        if self._http_pool is None:
            # twisted.web.client has no annotations for HTTPConnectionPool and Agent.
            self._http_pool = HTTPConnectionPool(reactor, persistent=True)  # type: ignore[no-untyped-call]
        # Agent implements IAgent, which mypy cannot see without the zope plugin.
        agent = Agent(reactor, pool=self._http_pool)  # type: ignore[no-untyped-call]
        return HTTPClient(agent)  # type: ignore[arg-type]

    @defer.inlineCallbacks
    def _notifier(self, settings: Settings) -> Any:
        """The webhooks, their URLs rendered (a secret's value never reaches the log)."""
        hooks = []
        for spec in settings.webhooks:
            try:
                url = yield self.renderSecrets(spec.url)
            except Exception as exc:
                log.msg(
                    f"buildbot-revert: a {spec.name} webhook URL could not be rendered "
                    f"({type(exc).__name__}); that webhook is off"
                )
                continue
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                log.msg(f"buildbot-revert: a {spec.name} webhook URL is not http(s); it is off")
                continue
            hooks.append(Webhook(spec, url.strip(), self._http(), self._reactor()))
            log.msg(f"buildbot-revert: notifying a {spec.name} webhook at {public_part(url)}")
        return Notifier(hooks)

    def _master_name(self) -> str:
        name = getattr(self.master, "name", None) or ""
        return str(name)[:255]

    def _web_url(self) -> str | None:
        url = getattr(getattr(self.master, "config", None), "buildbotURL", None)
        return url if isinstance(url, str) and url else None

    def _build_url(self, builder: str, number: int) -> str | None:
        base = self._web_url()
        builderid = self._builder_ids.get(builder)
        if base is None or builderid is None:
            return None
        return f"{base.rstrip('/')}/#/builders/{builderid}/builds/{number}"

    # -- lifecycle ------------------------------------------------------------------

    @defer.inlineCallbacks
    def startService(self) -> Any:
        yield super().startService()
        # Several masters without a shared message queue: say once that streaks may be split.
        warning = split_streaks_warning(getattr(self.master, "config", None))
        if warning is not None:
            log.msg(warning)
        # Subscribe before replaying, so no build finishes unseen in between;
        # the lock makes the events wait for the replay.
        self._consumer = yield self.master.mq.startConsuming(self._on_finished, FINISHED)
        self._change_consumer = yield self.master.mq.startConsuming(self._on_change, NEW_CHANGE)
        # The master does not wait for the memory: a rebuild from a month of
        # builds takes minutes, and Buildbot starts its schedulers and lets
        # workers in only once every service has started.  Builds that finish
        # meanwhile wait behind the lock; ``ready`` fires when it is rebuilt.
        self.ready = self._lock.run(self._start_tracker)
        self.ready.addCallback(lambda _: self._started())
        self._background(self.ready, "starting the tracker")

    def _started(self) -> None:
        self._schedule_pending()
        self._schedule_overdue()
        # Filing rows the previous process left behind, and grace periods
        # that ended while the master was down (in the background: GitHub
        # may be slow, the master need not wait).
        self._background(self._check_pending(starting=True), "checking pending reverts")

    @defer.inlineCallbacks
    def stopService(self) -> Any:
        if not self.running:
            return
        for consumer in (self._consumer, self._change_consumer):
            if consumer is not None:
                yield consumer.stopConsuming()
        self._consumer = self._change_consumer = None
        if self._pending_loop is not None and self._pending_loop.running:
            self._pending_loop.stop()
        if self._overdue_loop is not None and self._overdue_loop.running:
            self._overdue_loop.stop()
        # Let the build being handled, and any filing in flight, finish;
        # then remember what the tracker knows.
        yield self._lock.run(lambda: None)
        yield defer.DeferredList(list(self._filing))
        yield self._lock.run(self._save_memory)
        if self._http_pool is not None:
            # twisted.web.client has no annotations for HTTPConnectionPool.
            yield self._http_pool.closeCachedConnections()  # type: ignore[no-untyped-call]
        yield super().stopService()

    @defer.inlineCallbacks
    def _start_tracker(self) -> Any:
        assert self.settings is not None and self.ledger is not None
        assert self.gatherer is not None and self.memory is not None
        try:
            yield self.ledger.create()
            yield self.memory.create()
            if self.decisions is not None:
                yield self.decisions.create()
            if self.held is not None:
                yield self.held.create()
            # Before the replay: a verification build that finished while
            # the master was down completes the verdict it was held for.
            yield self._restore_held()
            proposed = yield self.ledger.revisions()
            snapshot = yield self._load_memory()
            if snapshot is not None:
                self.tracker = snapshot.tracker
                self.tracker.attach(self._watched.__contains__, self._builder_tags)
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
            # Read in batches through the master's database (history.py).
            rows = yield history.builds_since(self.master, since)
            replayed = 0
            reader = history.Reader(self.master, self.gatherer, rows)
            while (batch := (yield reader.next())) is not None:
                replayed += yield self._replay(batch, skip, act=snapshot is not None)
            log.msg(
                f"buildbot-revert: {how}; replayed {replayed} build(s); "
                f"{len(proposed)} revision(s) in the ledger; red: {self.tracker.red_builders()}"
            )
            yield self._save_memory()
            yield self._resume_held()
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not rebuild the tracker")
            if self.tracker is None:
                self.tracker = self._new_tracker(())

    @defer.inlineCallbacks
    def _replay(self, batch: list[dict[str, Any]], skip: frozenset[int], *, act: bool) -> Any:
        """Feed a batch of the builds since the memory (read ahead); how many were fed.

        The batch's verdicts are kept for the dashboard in one transaction.
        A build read ahead feeds without a trip to the reactor, so the
        reactor is let run every :data:`REPLAY_SLICE` builds: the master
        starting meanwhile is not held up.
        """
        replayed = 0
        if self.decisions is not None:
            self.decisions.hold()
        try:
            for n, row in enumerate(batch):
                if n and not n % REPLAY_SLICE:
                    yield task.deferLater(self._reactor(), 0, lambda: None)
                self._replayed.add(row["buildid"])
                if row["buildid"] in skip:
                    continue
                try:
                    # Builds the last process may not have acted on are acted on
                    # now; a rebuild's are history, recorded but not acted on.
                    yield self._feed(row, act=act)
                    replayed += 1
                except Exception as exc:  # one bad build must not stop the replay
                    _log_failure(exc, "buildbot-revert: could not replay a build")
        finally:
            if self.decisions is not None:
                yield self._kept(self.decisions.flush())
        return replayed

    @defer.inlineCallbacks
    def _kept(self, flushed: Any) -> Any:
        try:
            yield flushed
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not keep verdicts for the dashboard")

    @defer.inlineCallbacks
    def _restore_held(self) -> Any:
        """Take back the held verdicts and bisections a previous process left (:mod:`.held`)."""
        if self.held is None or (self.verifier is None and self.bisector is None):
            return
        try:
            rows = yield self.held.load()
            requests = yield self.held.requests_since(self._reactor().seconds() - DAY)
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not read the held verdicts")
            return
        held = self.verifier.restore(rows) if self.verifier is not None else 0
        searches = self.bisector.restore(rows, requests) if self.bisector is not None else 0
        if held or searches:
            log.msg(
                f"buildbot-revert: took back {held} verdict(s) held for verification and "
                f"{searches} bisection(s) in flight"
            )

    @defer.inlineCallbacks
    def _resume_held(self) -> Any:
        """Request again what the held verdicts and searches never had requested."""
        since = self._reactor().seconds() - RESUME_LOOK_BACK
        again = 0
        for holder in (self.verifier, self.bisector):
            if holder is not None:
                again += yield holder.resume(since)
        if again:
            log.msg(f"buildbot-revert: requested {again} build(s) again that never were")

    @defer.inlineCallbacks
    def _load_memory(self) -> Any:
        assert self.settings is not None and self.memory is not None
        try:
            snapshot: Snapshot | None = yield self.memory.load(
                self._memory_owner(), self.settings.policy
            )
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: the saved memory could not be read; rebuilding")
            return None
        return snapshot

    def _memory_owner(self) -> str:
        return f"{self._master_name()}/{self.name}"[:255]

    @defer.inlineCallbacks
    def _save_memory(self) -> Any:
        """Save the tracker's memory (call with the lock held: nothing feeds it meanwhile).

        Pickled in the database's thread (:meth:`.Memory.save`): the lock,
        held until the row is written, keeps the builds that finish
        meanwhile from feeding it.
        """
        if self.tracker is None or self.memory is None or self.settings is None:
            return
        now = self._reactor().seconds()
        # A save that fails is tried again at the next interval, not every build.
        self._unsaved, self._saved_at = 0, now
        try:
            yield self.memory.save(
                self._memory_owner(), self.settings.policy, self.tracker, self._catch_up, now
            )
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not save the tracker's memory")

    def _new_tracker(self, proposed: Any) -> StreakTracker:
        assert self.settings is not None
        # Every builder is fed: the ones outside the selection are evidence
        # for the guards (what fails where, which workers agree), exactly as
        # the simulator replays them; only the selected ones may propose.
        # Its tags_of reads the tags gathered with each build, before the
        # build is fed (the tracker asks once per builder).
        return StreakTracker(
            self.settings.policy,
            proposed=proposed,
            watched=self._watched.__contains__,
            tags_of=self._builder_tags,
        )

    def _builder_tags(self, builder: str) -> tuple[str, ...]:
        return self._tags.get(builder, ())

    def _schedule_pending(self) -> None:
        settings = self.settings
        if settings is None or not self.running or settings.mode is Mode.DRY_RUN:
            return
        if self.filer is None:
            return
        if self._pending_loop is not None and self._pending_loop.running:
            return
        interval = (
            60.0 if settings.grace_period <= 0 else min(60.0, max(1.0, settings.grace_period / 4))
        )
        interval = min(interval, settings.follow_interval)
        self._pending_loop = task.LoopingCall(self._check_pending)
        self._pending_loop.clock = self._reactor()
        self._pending_loop.start(interval, now=False)

    def _schedule_overdue(self) -> None:
        """Look for forced builds that never ran, a few times per timeout."""
        settings = self.settings
        if settings is None or not self.running:
            return
        if self._overdue_loop is not None and self._overdue_loop.running:
            self._overdue_loop.stop()
        if self.verifier is None and self.bisector is None:
            return
        interval = min(60.0, max(1.0, settings.forced_build_timeout / 4))
        self._overdue_loop = task.LoopingCall(lambda: self._lock.run(self._check_overdue))
        self._overdue_loop.clock = self._reactor()
        self._overdue_loop.start(interval, now=False)

    @defer.inlineCallbacks
    def _check_overdue(self) -> Any:
        """Decline held verdicts, and abandon bisections, whose builds never ran."""
        assert self.settings is not None
        now, timeout = self._reactor().seconds(), self.settings.forced_build_timeout
        try:
            ended = []
            for holder in (self.verifier, self.bisector):
                if holder is not None:
                    ended += yield holder.overdue(now, timeout)
            for verdict, judgement in ended:
                for event in self._verified(verdict, judgement):
                    yield self._note(event)
                    self._log_verdict(event, live=True)
                    if self.filer is not None:
                        yield defer.Deferred.fromCoroutine(self.filer.record(event))
        except Exception as exc:  # the loop must go on
            _log_failure(exc, "buildbot-revert: checking for forced builds that never ran failed")

    @defer.inlineCallbacks
    def _check_pending(self, starting: bool = False) -> Any:
        """The filer's periodic check, outside the build lock (it may wait on GitHub).

        The grace rule reads only facts dated up to each deadline, recorded
        under the lock as builds finish, so deciding while builds are fed
        does not change a decision.
        """
        if self.filer is None or self._checking:
            return
        self._checking = True
        try:
            yield defer.Deferred.fromCoroutine(self.filer.check_pending(starting=starting))
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: checking pending reverts failed")
        try:
            if self.follow_up is not None:
                yield defer.Deferred.fromCoroutine(self.follow_up.check())
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: following revert PRs failed")
        finally:
            self._checking = False

    # -- events ---------------------------------------------------------------------

    def _on_finished(self, key: Any, msg: dict[str, Any]) -> None:
        # Returning at once keeps the master's event delivery from waiting on us.
        self._lock.run(self._handle, msg)

    def _on_change(self, key: Any, msg: dict[str, Any]) -> None:
        """A new change: known before the first build of it finishes.

        Its first build's blamelist would otherwise read it from the
        database, a second trip to the master's database thread for that
        build.  Outside the lock: the gatherer's cache of changes is the
        same whichever order it is filled in, and a change the reporter
        missed (one added while it was stopped, or evicted) is read then.
        """
        if self.gatherer is not None:
            try:
                self.gatherer.remember(msg)
            except Exception as exc:  # a malformed event must not reach the master's mq
                _log_failure(exc, "buildbot-revert: could not read a new change's event")

    @defer.inlineCallbacks
    def _gather(self, msg: dict[str, Any]) -> Any:
        assert self.gatherer is not None and self.settings is not None
        builder = yield self.gatherer.builder(msg["builderid"])
        if builder is None:
            return None
        if self.settings.watches(builder.name, builder.tags):
            self._watched.add(builder.name)
        else:
            self._watched.discard(builder.name)
        self._builder_ids[builder.name] = msg["builderid"]
        self._tags[builder.name] = builder.tags
        build = yield self.gatherer.build(msg)
        return build

    @defer.inlineCallbacks
    def _handle(self, msg: dict[str, Any]) -> Any:
        try:
            if msg.get("buildid") in self._replayed:
                self._replayed.discard(msg["buildid"])
                return
            if self.tracker is None:
                return
            yield self._feed(msg, act=True)
            self._unsaved += 1
            if (
                self._unsaved >= SAVE_EVERY
                or self._reactor().seconds() - self._saved_at >= SAVE_AFTER
            ):
                yield self._save_memory()
        except Exception as exc:
            _log_failure(exc, f"buildbot-revert: error handling build {msg.get('buildid')}")

    @defer.inlineCallbacks
    def _feed(self, msg: dict[str, Any], *, act: bool) -> Any:
        """Gather one finished build, feed it to the tracker, and hand on its events.

        ``act`` False: a rebuild of the memory from history, whose verdicts
        are recorded for revisions already in the ledger and acted on never.
        """
        assert self.tracker is not None
        build = yield self._gather(msg)
        if build is None:
            return
        verifier = self.verifier
        if build.verification is None:
            self._revisions.remember(build)
            if self.follow_up is not None and act:
                yield self._follow(build)
        events = self.tracker.feed(build)
        self._catch_up.note(build.completed_at, msg["buildid"])
        if build.verification is not None:
            events = (yield self._requested_build_finished(build)) if act else ()
        # Acted on once every event of the build is recorded: a verified
        # revert's builders that joined it while it was held are then named.
        to_file: list[str] = []
        for event in events:
            # Builders outside the selection only lend their evidence.
            if event.builder not in self._watched:
                continue
            # Kept for the dashboard, a verdict held for verification too.
            yield self._note(event)
            if isinstance(event, Verdict):
                self._log_verdict(event, live=act)
                if (
                    verifier is not None
                    and act
                    and build.verification is None
                    and ((yield self._hold(verifier, event)) or (yield verifier.join(event)))
                ):
                    continue
                if act and build.verification is None:
                    yield self._bisect(event)
            if self.filer is None:
                continue
            revision = yield defer.Deferred.fromCoroutine(self.filer.record(event, claim=act))
            if revision is not None:
                to_file.append(revision)
        for revision in dict.fromkeys(to_file):
            self._file(revision)

    @defer.inlineCallbacks
    def _hold(self, verifier: Verifier, verdict: Verdict) -> Any:
        """Hold a proposing verdict for its verification builds; False if not held."""
        if not wants_verification(verdict) or verdict.suspect is None or self.tracker is None:
            return False
        suspects = self.tracker.suspects_of(verdict.builder) or (verdict.suspect,)
        held = yield verifier.hold(verdict, suspects)
        return bool(held)

    @defer.inlineCallbacks
    def _bisect(self, verdict: Verdict) -> Any:
        """Start bisecting a several-change streak, when bisection is on and may."""
        bisector, tracker = self.bisector, self.tracker
        if bisector is None or tracker is None:
            return
        suspects = tracker.suspects_of(verdict.builder)
        if bisector.wants(verdict, suspects, tolerated=tracker.is_tolerated(verdict.builder)):
            started = yield bisector.start(verdict, suspects)
            if not started:
                log.msg(f"buildbot-revert: cannot bisect {verdict.builder}: no green revision")

    @defer.inlineCallbacks
    def _requested_build_finished(self, build: Build) -> Any:
        """One of our builds finished: the verdicts it completes (held, or found)."""
        if self.verifier is not None:
            done = yield self.verifier.finished(build)
            if done is not None:
                verdict, judgement, joined = done
                ended = self._verified(verdict, judgement)
                # Builders that qualified meanwhile join a filed revert; a
                # declined one takes them with it.
                return ended + tuple(joined) if judgement.confirmed else ended
        if self.bisector is None or self.tracker is None:
            return ()
        outcome = yield self.bisector.finished(build)
        if outcome is None:
            return ()
        if outcome[0] == "declined":
            _, verdict, judgement = outcome
            return self._verified(verdict, judgement)
        _, verdict, change, how = outcome
        found = self.tracker.judge_found(verdict.builder, change, how)
        log.msg(f"buildbot-revert: bisection on {verdict.builder} found {change.revision[:12]}")
        return () if found is None else (found,)

    def _verified(self, verdict: Verdict, judgement: Judgement) -> tuple[Verdict, ...]:
        """A verification ended: the held verdict as it ends."""
        outcome = judgement.reason.value if judgement.reason else "confirmed"
        log.msg(f"buildbot-revert: verification on {verdict.builder}: {outcome}")
        return (verified(verdict, judgement),)

    @defer.inlineCallbacks
    def _note(self, event: Verdict | Streak) -> Any:
        """Keep the verdict (or the streak's end) for the dashboard; never stops the feed."""
        if self.decisions is None:
            return
        try:
            yield self.decisions.note(event)
        except Exception as exc:
            _log_failure(exc, "buildbot-revert: could not keep a verdict for the dashboard")

    @defer.inlineCallbacks
    def _follow(self, build: Any) -> Any:
        """A build of a revert PR updates its summary; a reland is linked (issue 16)."""
        assert self.follow_up is not None
        follow_up = self.follow_up
        if pull_number_of_branch(build.branch) is not None:
            revision = yield defer.Deferred.fromCoroutine(follow_up.revert_build(build))
            if revision is not None:
                self._background(
                    defer.Deferred.fromCoroutine(follow_up.summarise(revision)),
                    f"summarising the builds of the revert of {revision[:12]}",
                )
        elif build.changes and follow_up.relands(build.changes):
            yield defer.Deferred.fromCoroutine(follow_up.note_changes(build.changes))

    def _log_verdict(self, event: Verdict, *, live: bool) -> None:
        self.verdicts.append(event)
        del self.verdicts[:-1000]
        log.msg(
            f"buildbot-revert: {event.builder} streak from build "
            f"{event.first_failing_build}: {event.reason.value}: {event.explanation}"
        )
        if live and event.reason in PROPOSING and self.filer is None:
            revision = event.request.revision if event.request else "?"
            log.msg(
                f"buildbot-revert: not acting on {revision[:12]}: "
                "no usable GitHub token (see the line about it above)"
            )

    def _file(self, revision: str) -> None:
        """Act on a revision in the background: GitHub may take minutes."""
        assert self.filer is not None
        self._background(
            defer.Deferred.fromCoroutine(self.filer.act(revision)), f"acting on {revision[:12]}"
        )

    def _background(self, d: defer.Deferred[Any], what: str) -> None:
        """Run ``d`` on its own; stopping the service waits for it."""
        self._filing.add(d)

        def done(result: Any) -> None:
            self._filing.discard(d)
            if isinstance(result, Failure):
                _log_failure(result, f"buildbot-revert: {what} failed")

        d.addBoth(done)


_HIDDEN = "<the GitHub token, hidden>"


def _one_line(exc: BaseException) -> str:
    """An exception's message on one short line (a KeyError's without its quotes)."""
    # util.Interpolate renders its parts with gatherResults: the cause is inside.
    while isinstance(exc, defer.FirstError) and exc.subFailure.value is not None:
        exc = exc.subFailure.value
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        text = exc.args[0]
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:300]


def _log_failure(failure: BaseException | Failure, why: str) -> None:
    """``log.err`` with a traceback, for errors that are bugs or surprises."""
    # twisted.python.log.err has no annotations.
    log.err(failure, why)  # type: ignore[no-untyped-call]


def _global_reactor() -> Any:
    from twisted.internet import reactor

    return reactor
