"""The pipeline every finished build goes through, and the hands of the post-verdict machine.

:class:`Pipeline` takes one finished build at a time (the reporter calls
it behind its lock, in completion order): it gathers the core's record of
the build, makes ready the suspects' diffs its decisions may read
(:mod:`.diffs`: fetched first, as the tracker cannot wait), feeds the
tracker, keeps each watched builder's verdicts and streak ends for the
dashboard (:mod:`.decisions`), and hands each verdict to the core's
:class:`~buildbot_revert.core.post_verdict.PostVerdict`.  The machine
decides what follows; the pipeline only carries its commands out:

- :class:`~buildbot_revert.core.machine_io.RequestBuild`: a buildset at the
  key's revision on the key's builder (:mod:`.forced_builds`);
- :class:`~buildbot_revert.core.machine_io.Conclude`: the verdict goes to
  the filer's ledger, and a revision it claims is acted on in the
  background (GitHub may take minutes);
- :class:`~buildbot_revert.core.machine_io.File` or
  :class:`~buildbot_revert.core.machine_io.CommentOnly`: the machine's
  answer to the filer's :class:`~buildbot_revert.core.machine_io.Filing`
  (the daily cap), asked with the count of reverts the ledger, which every
  master shares, holds for the last 24 hours;
- :class:`~buildbot_revert.core.machine_io.Say`: a line in the log.

A build the machine requested goes to the machine, never into a streak.
The machine's state (verdicts held for verification, bisections in flight,
the builds they requested) is written to the master's database
(:mod:`.held`) before any build is requested and whenever it changes, so a
restarted reporter takes it back (:meth:`Pipeline.restore`) and requests
again what was never requested (:meth:`Pipeline.resume`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.python import log

from buildbot_revert.core.diffs import Diff
from buildbot_revert.core.machine_io import (
    Command,
    Conclude,
    Judged,
    MachineSettings,
    RequestBuild,
    Say,
)
from buildbot_revert.core.model import Build, Builder, Change
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.post_verdict import MachineState, PostVerdict
from buildbot_revert.core.requests import RequestKey
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import PROPOSING, Streak, Verdict
from buildbot_revert.logline import say
from buildbot_revert.plugin.config import Settings
from buildbot_revert.plugin.diffs import DiffSource
from buildbot_revert.plugin.forced_builds import builder_slots, request_build
from buildbot_revert.plugin.held import HeldStore, key_of, register_kind
from buildbot_revert.plugin.ports import (
    BuildReader,
    DecisionNotes,
    Master,
    RevertFollower,
    VerdictFiler,
)

# The held row the machine's state is kept in.
KIND = "post-verdict"
# Its one field: the machine's state, as data (plugin/held.py, core/snapshot.py).
register_kind(KIND, {"state": MachineState})
_KEY = key_of(KIND)
# A restarted reporter looks this far back for the builds the machine
# requested before requesting any again.
RESUME_LOOK_BACK = 7 * 86400.0


@dataclass
class Hands:
    """The collaborators the pipeline acts through (made by :mod:`.wiring`)."""

    gatherer: BuildReader
    filer: VerdictFiler | None = None
    follow_up: RevertFollower | None = None
    decisions: DecisionNotes | None = None
    held: HeldStore | None = None
    # The suspects' diffs (.diffs), fetched before a build whose decision reads them.
    diffs: DiffSource | None = None


class Pipeline:
    """One finished build at a time, from the master to the ledger (see the module)."""

    def __init__(
        self,
        master: Master | None,
        clock: Callable[[], float],
        build_url: Callable[[str, int], str | None],
        background: Callable[[defer.Deferred[Any], str], None],
    ) -> None:
        self.master = master
        self.clock = clock
        self.build_url = build_url
        self.background = background
        self.hands: Hands | None = None
        self.settings: Settings | None = None
        self.tracker: StreakTracker | None = None
        self.machine = PostVerdict(MachineSettings(), self._judge_found)
        # Builders the selection lets propose; the others are evidence.
        self.watched: set[str] = set()
        # Every gathered builder's tags and id.
        self.tags: dict[str, tuple[str, ...]] = {}
        self.builder_ids: dict[str, int] = {}
        self.verdicts: list[Verdict] = []
        # The verdicts as the machine concluded them (a thousand at most).
        self.concluded: list[Verdict] = []

    def configure(self, settings: Settings, hands: Hands) -> None:
        """New settings and collaborators; the machine keeps what it holds."""
        self.settings, self.hands = settings, hands
        self.machine = PostVerdict(settings.machine, self._judge_found, state=self.machine.state)
        # The filer and the follow-up ask this machine (as it is then: a
        # restore replaces it) about the daily cap, grace periods, objections
        # and stand-downs.
        for hand in (hands.filer, hands.follow_up):
            if hand is not None:
                hand.machine_of = self.current_machine

    def current_machine(self) -> PostVerdict:
        """The post-verdict machine as it is now."""
        return self.machine

    def _judge_found(self, builder: str, change: Change, how: str) -> Verdict | None:
        """The tracker's verdict on a change bisection found (None without a tracker)."""
        if self.tracker is None:
            return None
        return self.tracker.judge_found(builder, change, how)

    def builder_tags(self, builder: str) -> tuple[str, ...]:
        """The tags gathered with the builder's latest build (what the tracker asks)."""
        return self.tags.get(builder, ())

    def note_builder(self, builderid: int, builder: Builder) -> None:
        """A builder as the master last said it: its id, whether it is watched, its tags.

        Noted before each of its builds is fed, and on a reconfiguration
        (:mod:`.builder_updates`).  Tags that changed reach the tracker
        (:meth:`~buildbot_revert.core.tracker.StreakTracker.retag`), whose
        next decision on the builder reads them.
        """
        assert self.settings is not None
        if self.settings.watches(builder.name, builder.tags):
            self.watched.add(builder.name)
        else:
            self.watched.discard(builder.name)
        self.builder_ids[builder.name] = builderid
        if self.tags.get(builder.name) != builder.tags:
            self.tags[builder.name] = builder.tags
            if self.tracker is not None:
                self.tracker.retag(builder.name, builder.tags)

    # -- one build ------------------------------------------------------------------

    async def feed(self, msg: dict[str, Any], *, act: bool) -> Build | None:
        """Gather one finished build, feed it, and carry its verdicts through; the build.

        ``act`` False: a rebuild of the memory from history, whose verdicts
        are recorded for revisions already in the ledger and acted on never.
        """
        assert self.tracker is not None and self.hands is not None
        build = await self._gather(msg)
        if build is None:
            return None
        ours = build.verification is not None
        if not ours:
            self.machine.built(build)
            if self.hands.follow_up is not None and act:
                await self._follow(build)
        await self._prefetch(build, act)
        to_file: list[str] = []
        try:
            events = self.tracker.feed(build)
            if ours:
                if act:
                    await self._carry_out(self.machine.finished(build), None, act, to_file)
            else:
                for event in events:
                    # Builders outside the selection only lend their evidence.
                    if event.builder in self.watched:
                        await self._take(event, act, to_file)
        finally:
            if self.hands.diffs is not None:
                self.hands.diffs.forget()
        for revision in dict.fromkeys(to_file):
            self._file(revision)
        return build

    async def _prefetch(self, build: Build, act: bool) -> None:
        """Make ready the diffs the decisions on ``build`` may read; never stops the feed."""
        assert self.tracker is not None and self.hands is not None
        diffs = self.hands.diffs
        if diffs is None:
            return
        wanted = self.tracker.diffs_wanted(
            build, bisection=self.machine.settings.bisection is not None
        )
        if not wanted:
            return
        try:
            # A replay rebuilding the memory reads the ledger only.
            await diffs.prefetch(wanted, fetch=act)
        except Exception as exc:
            log.err(exc, "buildbot-revert: could not make the suspects' diffs ready")  # type: ignore[no-untyped-call]

    def read_diff(self, change: Change) -> Diff | None:
        """The tracker's diff reader: what :meth:`_prefetch` made ready for this build."""
        diffs = self.hands.diffs if self.hands is not None else None
        return None if diffs is None else diffs.read(change)

    async def _gather(self, msg: dict[str, Any]) -> Build | None:
        """The core's record of a finished build; notes its builder's selection, tags and id."""
        assert self.hands is not None and self.settings is not None
        gatherer = self.hands.gatherer
        builder = await gatherer.builder(msg["builderid"])
        if builder is None:
            return None
        self.note_builder(msg["builderid"], builder)
        return await gatherer.build(msg)

    async def _take(self, event: Verdict | Streak, act: bool, to_file: list[str]) -> None:
        """One watched builder's event: kept, logged, and handed to the machine."""
        # Kept for the dashboard as it comes, a verdict held for verification too.
        await self._note(event)
        if isinstance(event, Streak):
            await self._record(event, act, to_file)
            return
        self._log_verdict(event, live=act)
        if not act:
            await self._record(event, act, to_file)
            return
        assert self.tracker is not None
        judged = Judged(
            event,
            self.tracker.suspects_of(event.builder),
            tolerated=self.tracker.is_tolerated(event.builder),
            width=builder_slots(self.master, event.builder),
            now=self.clock(),
        )
        await self._carry_out(self.machine.judged(judged), event, act, to_file)

    async def _carry_out(
        self, commands: Sequence[Command], came: Verdict | None, act: bool, to_file: list[str]
    ) -> None:
        """Carry out the machine's commands in order (``came``: the verdict handed in)."""
        if came is None or list(commands) != [Conclude(came)]:
            # Written before any build is requested: a restart in between
            # requests it again rather than forgetting the verdict.
            await self.save()
        for command in commands:
            if isinstance(command, RequestBuild):
                await self._request(command.key)
            elif isinstance(command, Conclude):
                verdict = command.verdict
                self.concluded.append(verdict)
                del self.concluded[:-1000]
                if verdict is not came:
                    await self._note(verdict)
                    self._log_verdict(verdict, live=act)
                await self._record(verdict, act, to_file)
            elif isinstance(command, Say):
                say(f"buildbot-revert: {command.text}")

    async def _request(self, key: RequestKey) -> None:
        """Ask the master for the build ``key`` names."""
        assert self.hands is not None
        builderid = self.builder_ids.get(key.builder)
        if builderid is None:
            say(f"buildbot-revert: cannot request a {key.describe()}: unknown builder")
            return
        streak = self.build_url(key.builder, key.streak) or (f"{key.builder} build {key.streak}")
        assert self.master is not None
        await request_build(self.master, self.hands.gatherer, builderid, key, streak)

    async def _record(self, event: Verdict | Streak, act: bool, to_file: list[str]) -> None:
        """Write the event to the ledger; a revision the filer claims is to be acted on."""
        assert self.hands is not None
        if self.hands.filer is None:
            return
        revision = await self.hands.filer.record(event, claim=act)
        if revision is not None:
            to_file.append(revision)

    # -- the clock, restarts --------------------------------------------------------------

    async def check_overdue(self) -> None:
        """Decline what waits for a requested build that never ran."""
        commands = self.machine.clock_passed(self.clock())
        if commands:
            to_file: list[str] = []
            await self._carry_out(commands, None, True, to_file)
            for revision in dict.fromkeys(to_file):
                self._file(revision)

    @property
    def waits(self) -> bool:
        """Whether a method is on that may request builds (the overdue check is needed)."""
        settings = self.machine.settings
        return settings.verification or settings.bisection is not None

    async def restore(self) -> None:
        """Take back the state a previous process saved (replacing what is held)."""
        held = self.hands.held if self.hands is not None else None
        if held is None or not self.waits:
            return
        try:
            rows = await held.load()
        except Exception as exc:
            log.err(exc, "buildbot-revert: could not read the held verdicts")  # type: ignore[no-untyped-call]
            return
        for row in rows:
            state = row.state.get("state") if row.kind == KIND else None
            if isinstance(state, MachineState):
                self.machine = PostVerdict(self.machine.settings, self._judge_found, state=state)
                say(
                    f"buildbot-revert: took back {len(state.verifying)} verdict(s) held for "
                    f"verification and {len(state.bisecting)} bisection(s) in flight"
                )

    async def resume(self) -> None:
        """Request again what the machine waits for and the master never had requested."""
        if not self.machine.waiting or self.hands is None:
            return
        now = self.clock()
        marks = await self.hands.gatherer.requested_marks(now - RESUME_LOOK_BACK)
        requested = Counter(k for k in map(RequestKey.decode, marks) if k is not None)
        commands = self.machine.restarted(requested, now)
        if commands:
            await self._carry_out(commands, None, True, [])
            say(f"buildbot-revert: requested {len(commands)} build(s) again that never were")

    async def save(self) -> None:
        """Write the machine's state (or drop it when nothing is held)."""
        held = self.hands.held if self.hands is not None else None
        if held is None:
            return
        if not self.machine.waiting:
            await held.drop(_KEY)
        else:
            await held.put(_KEY, KIND, {"state": self.machine.state}, self.clock())

    # -- what else a build tells ----------------------------------------------------------

    async def _note(self, event: Verdict | Streak) -> None:
        """Keep the verdict (or the streak's end) for the dashboard; never stops the feed."""
        decisions = self.hands.decisions if self.hands is not None else None
        if decisions is None:
            return
        try:
            await decisions.note(event)
        except Exception as exc:
            log.err(exc, "buildbot-revert: could not keep a verdict for the dashboard")  # type: ignore[no-untyped-call]

    async def _follow(self, build: Build) -> None:
        """A build of a revert PR updates its summary; a reland is linked, a human revert read."""
        assert self.hands is not None
        follow_up = self.hands.follow_up
        assert follow_up is not None
        if pull_number_of_branch(build.branch) is not None:
            revision = await follow_up.revert_build(build)
            if revision is not None:
                self.background(
                    defer.Deferred.fromCoroutine(follow_up.summarise(revision)),
                    f"summarising the builds of the revert of {revision[:12]}",
                )
        elif build.changes:
            if follow_up.relands(build.changes):
                await follow_up.note_changes(build.changes)
            if follow_up.human_reverts(build.changes):
                await follow_up.note_human_reverts(build.changes)

    def _log_verdict(self, event: Verdict, *, live: bool) -> None:
        """Keep the verdict among the latest and write it to the log."""
        self.verdicts.append(event)
        del self.verdicts[:-1000]
        # The builder's name and the explanation (which quotes test names
        # from logs) are untrusted: shown escaped, they drive no terminal.
        say(
            f"buildbot-revert: {event.builder} streak from build "
            f"{event.first_failing_build}: {event.reason.value}: {event.explanation}"
        )
        if live and event.reason in PROPOSING and self.hands and self.hands.filer is None:
            revision = event.request.revision if event.request else "?"
            say(
                f"buildbot-revert: not acting on {revision[:12]}: "
                "no usable GitHub token (see the line about it above)"
            )

    def _file(self, revision: str) -> None:
        """Act on a revision in the background: GitHub may take minutes."""
        assert self.hands is not None and self.hands.filer is not None
        self.background(
            defer.Deferred.fromCoroutine(self.hands.filer.act(revision)),
            f"acting on {revision[:12]}",
        )
