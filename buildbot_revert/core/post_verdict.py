"""The post-verdict machine: what happens to a streak's verdict once it is judged.

Theory of operation
-------------------

The tracker judges a red streak; this machine owns what follows, in both
shells.  It takes *events* and returns *commands*; it never performs one.
The plugin turns commands into master and GitHub calls
(:mod:`buildbot_revert.plugin.pipeline`), the simulator into outcomes of its
truth model on a simulated clock (:mod:`simulator.analysis.engine`).

Events in:

=====================  ======================================================
``Built(build)``       an ordinary build finished (what each builder last
                       built green: where verification and bisection start)
``Judged(verdict)``    the tracker judged a watched builder's streak
``OursFinished``       a build the machine requested finished
``ClockPassed(now)``   time passed: a requested build may never have run
``Restarted``          a new process took the state back: the builds it
                       never requested are requested again
``Filing``             a proposing verdict is about to be filed: the daily cap
                       (the shell may say how many it filed in the last 24
                       hours; else the machine counts what it said to file)
                       and the grace period
``GraceCheck``         the clock passed a grace deadline
``Objection``          someone with standing said no during a grace period
``RevertFollowed``     a filed revert PR looked at again (its builders now)
``PullRead``           that revert PR as GitHub shows it (merged, closed,
                       touched by a human)
=====================  ======================================================

Commands out: :class:`RequestBuild` (revision R on builder B, named by a
:class:`~.requests.RequestKey`), :class:`Conclude` (the verdict as it ends:
record it, file it if it proposes), :class:`File`, :class:`CommentOnly`
(the daily cap is reached), :class:`CommentFirst` (a grace period starts),
:class:`KeepWaiting`, :class:`Withdraw` (every builder recovered in time,
or someone objected), :class:`NoLongerNeeded` / :class:`StillNeeded` (a
filed revert PR, stood down or left open), a
:class:`~.outcomes.FollowPlan` (the follow-up's step for it: record a human's
end, keep, close, mark or comment, as ``stand_down`` and ``close_touched``
say) and :class:`Say` (a line for the log).

A verdict the machine holds is in :class:`MachineState`'s ``verifying`` or
``bisecting`` list until it is concluded (the plugin persists that state in
``plugin/held.py``); a concluded verdict that proposes a revert is claimed
in the ledger, and from there its state is the core's lifecycle
(:mod:`.lifecycle`: one enum, one table; the commands below are what its
shells feed it, through :mod:`.actions`).

- A verdict that proposes a revert, with ``verification`` on and the
  suspect's parent known, is *held*: the parent is built on the builder
  that qualified (and the suspect too, when its first failing build held
  other changes).  When they finish, :func:`~.verification.judge` decides:
  concluded with its proof appended (``confirmed``), or declined
  (``environment``, ``unverified``).
- A verdict a guard declined for doubt (``failing-before``, ``stale-green``,
  ``configuration-specific``, ``flaky-builder``, ``flaky-case``:
  :data:`~.verification.DOUBTS`) is held alike, on a builder not allowed to
  fail: the parent is built, then, once it passed, the suspect (one after
  the other: a parent failing alike decides alone, and a doubt is most
  often the world's, so the suspect's build is spent only when it can tell).
  The parent failing alike declines it ``environment``; the parent passing
  and the suspect failing alike proposes it (``revert``, the doubt and its proof in the
  sentence); anything else, or no answer in time, ``unverified``.  A change
  bisection found that the tracker then judges a doubt is proposed with the
  search's builds as its proof (they built its parent, which passed, and
  it, which failed alike), as ``revert-by-bisection``, when verification
  is on.  Another builder qualifying on the
  held suspect meanwhile (``already-proposed``) *joins* it: concluded
  after a confirmed verdict, dropped with a declined one.
- A ``multiple-changes`` verdict that :func:`~.bisection.worth_bisecting`
  takes up, when the bisection caps (builds in any 24 hours, per builder and
  in all) hold a whole search and the builder's last green revision is
  known, is *bisected*: one batch at a time, as wide as the builder runs
  builds at once (n-section).  Found: the tracker's ``judge_found``
  verdict is concluded; a probe that neither passes nor fails alike
  declines it; running out of builds concludes the verdict as it was.
- A requested build not finished ``forced_build_timeout`` seconds after it
  was requested never ran: the verdict is declined ``unverified``.
- A requested build that ends ``RETRY`` is run again by Buildbot: the machine
  waits for the next.  One that ends ``CANCELLED`` is not (a user stopped it, or
  Buildbot 4.3 ended a build a shutdown interrupted so): the machine requests it
  again, once per key, the timeout counting from the new request; a second
  cancelled build of the key is judged as it came (``unverified``).
- Everything else is concluded as it came.
- Filing a proposing verdict counts against ``daily_cap`` (reverts filed
  in any 24 hours); beyond it the revert becomes a comment.  This is the
  one place the cap is decided, from the pull requests each shell opened in
  the 24 hours before: the plugin's filer asks before it files (and again at
  a grace deadline) with its ledger's count across masters and restarts, the
  simulator's engine with the count of its simulated GitHub.  With a grace period the culprit is
  warned first; at each deadline the grace rule of :mod:`.grace` files,
  waits, or withdraws (:mod:`.filing_rules`).

State is plain data (:class:`MachineState`: verdicts, builds, revisions,
times), so a shell can save it and a restarted process take it back.  Times
come in with the events: the machine never reads a clock.  Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from buildbot_revert.core import filing_rules
from buildbot_revert.core.bisection import Bisection, DailyCaps, builds_needed, worth_bisecting
from buildbot_revert.core.machine_io import (
    BisectionCaps,
    Command,
    Conclude,
    Filing,
    FilingCommand,
    GraceCheck,
    GraceCommand,
    Judged,
    MachineSettings,
    NoLongerNeeded,
    Objection,
    PullRead,
    RequestBuild,
    RevertFollowed,
    Say,
    StillNeeded,
    Withdraw,
)
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.outcomes import FollowPlan
from buildbot_revert.core.requests import GreenRevisions, RequestKey, Role, parent_in
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import (
    Judgement,
    doubting,
    judge,
    never_ran,
    verified,
    wants_verification,
)

_DAY = 86400.0
# A build the master stopped: Buildbot runs a RETRY one again (its request's next
# build counts), never a CANCELLED one (the machine requests that once more itself).
_AGAIN = frozenset({int(Result.RETRY)})
_CANCELLED = int(Result.CANCELLED)
_PASSED = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})


# -- state -----------------------------------------------------------------------------


@dataclass
class Verifying:
    """A proposing verdict held for its verification builds."""

    verdict: Verdict
    # The parent first, then (when its first failing build held more) the suspect.
    keys: tuple[RequestKey, ...]
    requested_at: float
    parent_build: Build | None = None
    suspect_build: Build | None = None
    # Other builders that qualified on the same change meanwhile.
    joined: list[Verdict] = field(default_factory=list)

    @property
    def waiting(self) -> tuple[RequestKey, ...]:
        """The keys whose builds have not finished."""
        done = (self.parent_build, self.suspect_build)
        return tuple(k for i, k in enumerate(self.keys) if done[i] is None)


@dataclass
class Bisecting:
    """A bisection in flight: the search and the batch requested."""

    verdict: Verdict
    search: Bisection
    width: int
    batch: tuple[RequestKey, ...]
    requested_at: float
    built: list[tuple[str, Build]] = field(default_factory=list)

    @property
    def waiting(self) -> tuple[RequestKey, ...]:
        """The keys of the batch whose builds have not finished."""
        done = {revision for revision, _ in self.built}
        return tuple(k for k in self.batch if k.revision not in done)


@dataclass
class MachineState:
    """Everything the machine holds: what a shell saves and takes back."""

    verifying: list[Verifying] = field(default_factory=list)
    bisecting: list[Bisecting] = field(default_factory=list)
    # Bisection builds requested: (builder, when), for the daily caps.
    requests: list[tuple[str, float]] = field(default_factory=list)
    # When each revert was filed, for the daily cap on filed reverts.
    filed: list[float] = field(default_factory=list)
    revisions: GreenRevisions = field(default_factory=GreenRevisions)
    # Requested builds that ended cancelled once and were requested again (while
    # they wait): a second cancellation is judged, never requested a third time.
    requested_again: set[RequestKey] = field(default_factory=set)


# The tracker's judgement of a change bisection found (None: the streak moved on).
JudgeFound = Callable[[str, Change, str], Verdict | None]


def _nothing_found(builder: str, change: Change, how: str) -> None:
    """A machine without a tracker never bisects to a change it could judge."""
    return None


class PostVerdict:
    """The machine (see the module): events in, commands out, state as data."""

    def __init__(
        self,
        settings: MachineSettings,
        judge_found: JudgeFound | None = None,
        state: MachineState | None = None,
    ) -> None:
        self.settings = settings
        self.judge_found = judge_found or _nothing_found
        self.state = state or MachineState()
        caps = settings.bisection or BisectionCaps()
        self._spent = DailyCaps(caps.per_day, caps.per_builder_per_day)
        self._spent.reset(self.state.requests)

    # -- events ---------------------------------------------------------------------

    def built(self, build: Build) -> None:
        """An ordinary build finished: remember what its builder built (green)."""
        self.state.revisions.remember(build)

    def judged(self, event: Judged) -> list[Command]:
        """A watched builder's verdict: hold it, join it, bisect it, or conclude it."""
        verdict = event.verdict
        if self.settings.verification:
            if verdict.reason is Reason.ALREADY_PROPOSED and self._join(verdict):
                return []
            if wants_verification(verdict):
                return self._hold(event)
        if self.settings.bisection is not None and self._bisects(event):
            return self._bisect(event)
        return [Conclude(verdict)]

    def finished(self, build: Build) -> list[Command]:
        """A build this machine requested finished (others: nothing)."""
        key = RequestKey.decode(build.verification)
        if key is None or build.result in _AGAIN:
            return []
        commands = self._judge_finished(key, build)
        self._forget_ended()
        return commands

    def _judge_finished(self, key: RequestKey, build: Build) -> list[Command]:
        """The build ``key`` names finished: request it again, wait for more, or judge."""
        for held in self.state.verifying:
            if key in held.waiting:
                again = self._again(held, key, build)
                return again or self._verified(held, key, build)
        for search in self.state.bisecting:
            if key in search.waiting:
                again = self._again(search, key, build)
                return again or self._probed(search, key, build)
        return []

    def clock_passed(self, now: float) -> list[Command]:
        """Decline what waits for a build that never ran."""
        timeout = self.settings.forced_build_timeout
        commands: list[Command] = []
        for held in list(self.state.verifying):
            if now - held.requested_at >= timeout:
                self.state.verifying.remove(held)
                commands += self._gave_up(held.verdict, held.waiting[0], now - held.requested_at)
        for search in list(self.state.bisecting):
            if now - search.requested_at >= timeout:
                self.state.bisecting.remove(search)
                commands += self._gave_up(
                    search.verdict, search.waiting[0], now - search.requested_at
                )
        self._forget_ended()
        return commands

    def restarted(self, requested: Mapping[RequestKey, int], now: float) -> list[Command]:
        """Request again what a previous process never requested.

        ``requested``: how many requests of each key the master holds; a key requested
        again after a cancelled build needs two (a process may stop before the second).
        """
        again = self.state.requested_again
        commands: list[Command] = []
        holders: list[Verifying | Bisecting] = [*self.state.verifying, *self.state.bisecting]
        for holder in holders:
            missing = [k for k in holder.waiting if requested.get(k, 0) < 1 + (k in again)]
            if missing:
                # The timeout counts from this request: the first never happened.
                holder.requested_at = now
                commands += [RequestBuild(k) for k in missing]
        return commands

    def filing(self, event: Filing) -> FilingCommand:
        """File, warn first (grace), or only comment (the daily cap): :mod:`.filing_rules`."""
        return filing_rules.filing(self.settings, self.state.filed, event)

    def grace_over(self, event: GraceCheck) -> GraceCommand:
        """A grace deadline passed: file, keep waiting, or withdraw (:mod:`.filing_rules`)."""
        return filing_rules.grace_over(self.settings, event)

    def objection(self, event: Objection) -> Withdraw:
        """Someone with standing said no during the grace period: withdraw."""
        return filing_rules.objection(event)

    def followed(self, event: RevertFollowed) -> NoLongerNeeded | StillNeeded:
        """A filed revert PR looked at again: stand it down, or leave it open."""
        return filing_rules.followed(event)

    def pull_read(self, event: PullRead) -> FollowPlan:
        """A filed revert PR as GitHub shows it: record its end, keep it, or stand it down."""
        return filing_rules.pull_read(self.settings, event)

    @property
    def waiting(self) -> tuple[RequestKey, ...]:
        """Every requested build not finished yet."""
        holders: list[Verifying | Bisecting] = [*self.state.verifying, *self.state.bisecting]
        return tuple(k for h in holders for k in h.waiting)

    # -- builds cancelled ----------------------------------------------------------------

    def _again(self, holder: Verifying | Bisecting, key: RequestKey, build: Build) -> list[Command]:
        """Request ``key`` once more if its build ended cancelled the first time (else nothing).

        Buildbot does not run a cancelled build again, and a cancellation
        says nothing about the change; judging it would decline the verdict
        for want of proof.  Once only: a build cancelled twice is judged.
        """
        if build.result != _CANCELLED or key in self.state.requested_again:
            return []
        self.state.requested_again.add(key)
        # The timeout counts from this request, as after a restart.
        holder.requested_at = build.completed_at
        said = Say(f"the {key.describe()} was cancelled (build {build.number}): requested again")
        return [said, RequestBuild(key)]

    def _forget_ended(self) -> None:
        """Keep only the keys requested again that are still waited for (the state stays small)."""
        if self.state.requested_again:
            waiting = set(self.waiting)
            self.state.requested_again &= waiting

    # -- verification ------------------------------------------------------------------

    def _join(self, verdict: Verdict) -> bool:
        """Add another builder's qualification to the held verdict on its suspect, if any."""
        for held in self.state.verifying:
            if verdict.suspect is not None and held.verdict.suspect == verdict.suspect:
                held.joined.append(verdict)
                return True
        return False

    def _hold(self, event: Judged) -> list[Command]:
        """Hold a proposing verdict, requesting its verification builds (no parent known: pass)."""
        verdict = event.verdict
        suspect = verdict.suspect
        assert suspect is not None
        if doubting(verdict) and event.tolerated:
            # A builder allowed to fail never proposes: no doubt of it to settle.
            return [Conclude(verdict)]
        suspects = event.suspects or (suspect,)
        green = self.state.revisions.green_of(verdict.builder)
        parent = parent_in(suspects, suspect.revision, green)
        if parent is None:
            return [
                Say(
                    f"cannot verify {suspect.revision[:12]} on {verdict.builder}: "
                    "its parent revision is unknown"
                ),
                Conclude(verdict),
            ]
        stamp = (verdict.builder, verdict.first_failing_build)
        keys = [RequestKey(*stamp, revision=parent, role=Role.PARENT)]
        # A doubt builds the suspect too, once the parent passed (see
        # _then_suspect), not beside it: a parent failing alike settles a
        # doubt alone, and most doubts are the world's.
        if len(suspects) > 1 and not doubting(verdict):
            keys.append(RequestKey(*stamp, revision=suspect.revision, role=Role.SUSPECT))
        self.state.verifying.append(Verifying(verdict, tuple(keys), event.now))
        return [RequestBuild(k) for k in keys]

    def _verified(self, held: Verifying, key: RequestKey, build: Build) -> list[Command]:
        """One verification build finished: wait for the other, or judge the held verdict."""
        if key.role is Role.PARENT:
            held.parent_build = build
        else:
            held.suspect_build = build
        if held.waiting:
            return []
        then = self._then_suspect(held, build)
        if then:
            return then
        self.state.verifying.remove(held)
        verdict = held.verdict
        assert verdict.suspect is not None and held.parent_build is not None
        judgement = judge(
            held.parent_build, verdict.evidence, held.suspect_build, verdict.suspect.revision
        )
        outcome = judgement.reason.value if judgement.reason else "confirmed"
        said = Say(f"verification on {verdict.builder}: {outcome}")
        if judgement.confirmed:
            joined = [Conclude(v) for v in held.joined]
            return [said, Conclude(verified(verdict, judgement)), *joined]
        return [said, Conclude(verified(verdict, judgement))]

    def _then_suspect(self, held: Verifying, build: Build) -> list[Command]:
        """A doubt whose parent passed: request the suspect's build now (else nothing).

        A flake passes on the parent as it would on the suspect: only the
        suspect failing again tells a breakage from it.  A parent that did
        not pass decides alone (``environment`` or ``unverified``).
        """
        verdict = held.verdict
        if not doubting(verdict) or len(held.keys) > 1 or build.result not in _PASSED:
            return []
        assert verdict.suspect is not None
        parent = held.keys[0]
        key = RequestKey(
            parent.builder, parent.streak, revision=verdict.suspect.revision, role=Role.SUSPECT
        )
        held.keys = (*held.keys, key)
        # The timeout counts from this request.
        held.requested_at = build.completed_at
        return [RequestBuild(key)]

    def _gave_up(self, verdict: Verdict, key: RequestKey, waited: float) -> list[Command]:
        """The verdict declined because the build ``key`` names never ran."""
        judgement = never_ran(key.describe(), verdict.builder, waited)
        return [
            Say(f"gave up waiting for the {key.describe()}"),
            Say(f"verification on {verdict.builder}: {Reason.UNVERIFIED.value}"),
            Conclude(verified(verdict, judgement)),
        ]

    # -- bisection -----------------------------------------------------------------------

    def _bisects(self, event: Judged) -> bool:
        """Whether bisection takes up the streak and the caps hold a whole search now."""
        caps = self.settings.bisection
        assert caps is not None
        verdict = event.verdict
        if not worth_bisecting(
            verdict,
            event.suspects,
            max_changes=caps.max_changes,
            max_age=caps.max_age,
            tolerated=event.tolerated,
        ):
            return False
        room = self._spent.room(verdict.builder, event.now)
        return room >= builds_needed(len(event.suspects), event.width)

    def _bisect(self, event: Judged) -> list[Command]:
        """Begin a search from the builder's last green revision (none known: pass)."""
        verdict = event.verdict
        green = self.state.revisions.green_of(verdict.builder)
        if green is None:
            return [Say(f"cannot bisect {verdict.builder}: no green revision"), Conclude(verdict)]
        search = Bisection(green, event.suspects, frozenset(verdict.evidence))
        bisecting = Bisecting(verdict, search, max(1, event.width), (), event.now)
        self.state.bisecting.append(bisecting)
        return self._next_batch(bisecting, event.now)

    def _next_batch(self, bisecting: Bisecting, now: float) -> list[Command]:
        """Request the next batch, as wide as the builder and the caps allow."""
        builder = bisecting.verdict.builder
        room = min(self._spent.room(builder, now), bisecting.width)
        if room < 1:
            self.state.bisecting.remove(bisecting)
            return [
                Say(f"bisection on {builder} stopped: out of builds"),
                Conclude(bisecting.verdict),
            ]
        search = bisecting.search
        batch = search.batch(room)
        assert batch
        stamp = (builder, bisecting.verdict.first_failing_build)
        bisecting.batch = tuple(
            RequestKey(
                *stamp,
                revision=revision,
                role=Role.BISECTION_PARENT if revision == search.parent else Role.PROBE,
            )
            for revision in batch
        )
        bisecting.built, bisecting.requested_at = [], now
        for _ in batch:
            self._spent.spend(builder, now)
            self.state.requests.append((builder, now))
        self.state.requests[:] = [(b, at) for b, at in self.state.requests if at > now - _DAY]
        return [RequestBuild(k) for k in bisecting.batch]

    def _probed(self, bisecting: Bisecting, key: RequestKey, build: Build) -> list[Command]:
        """One bisection build finished: wait for its batch, go on, or end the search."""
        bisecting.built.append((key.revision, build))
        if bisecting.waiting:
            return []
        search, verdict = bisecting.search, bisecting.verdict
        judgement = search.record_batch(bisecting.built)
        found = search.found
        if judgement is not None:
            self.state.bisecting.remove(bisecting)
            return [Conclude(verified(verdict, judgement))]
        if found is None:
            return self._next_batch(bisecting, build.completed_at)
        self.state.bisecting.remove(bisecting)
        judged = self.judge_found(verdict.builder, found, search.explain())
        if judged is not None and self.settings.verification and doubting(judged):
            # The search built the change's parent (it passed) and the change
            # (it failed alike) now: the proof a doubt's verification asks.
            proof = Judgement(None, f"the bisection's builds settle it: {search.explain()}")
            judged = verified(judged, proof, Reason.REVERT_BY_BISECTION)
        said = Say(f"bisection on {verdict.builder} found {found.revision[:12]}")
        return [said, Conclude(judged if judged is not None else verdict)]
