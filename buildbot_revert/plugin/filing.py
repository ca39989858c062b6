"""The reporter's hands: carry out the core's verdicts on GitHub and in the ledger.

:class:`Filer` takes the tracker's events for the watched builders.  Each
goes through :func:`buildbot_revert.core.grace.fact`, as in the simulator,
and what it says is written to the ledger first (:meth:`Filer.record`,
while the reporter holds its build lock): a ``revert`` verdict claims its
revision (only the claimant acts: one PR per revision across builders,
restarts and masters) and, like an ``already-proposed`` one, records that
its builder qualified; the end of a qualifying streak records when it
ended.  Acting on GitHub comes after, in the background
(:meth:`Filer.act`): fetch the facts :mod:`buildbot_revert.core.actions`
needs (whether the daily cap is reached is the post-verdict machine's
answer, given the count of reverts the ledger holds for the last 24 hours),
and have :class:`~.filing_steps.Steps` perform the step it plans:
record, comment, wait out a grace period, open the revert PR and comment on
the culprit with its link, or name on the revert PR the builders that
qualified after it was opened.

An objection comment or the opt-out label counts only from someone with
standing (the culprit's author, or a user with the configured role:
:mod:`buildbot_revert.core.standing`); :class:`~.permissions.Standing` asks
GitHub and logs each login it ignores.

Every text is written from the ledger alone (title, explanation, evidence,
and the builders that qualified, with links to their failing builds), so it
is the same whether or not the master restarted in between; a grace period
is decided by the post-verdict machine (a ``GraceCheck`` with the recorded
qualifications and streak ends, an ``Objection``), never from what a builder
looks like when the timer fires.

Every failure is contained here: any error while acting (GitHub's, or a
bug's) returns a ``filing`` row to where it came from with the error in
``detail`` (no secret can be in it: the client redacts), and
:meth:`Filer.check_pending` retries it later; a ``filing`` row that a crash
left behind is found stale, and the PR it may have opened is looked for on
GitHub before anything is filed again.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.python import log

from buildbot_revert.core import actions, grace, lifecycle, pr_text
from buildbot_revert.core.actions import Facts, RevertState
from buildbot_revert.core.grace import Qualification, Qualified, StreakEnd
from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.machine_io import (
    CommentFirst,
    CommentOnly,
    File,
    Filing,
    GraceCheck,
    KeepWaiting,
    Objection,
    Withdraw,
)
from buildbot_revert.core.post_verdict import PostVerdict
from buildbot_revert.core.verdicts import Streak, Verdict
from buildbot_revert.github import GitHubClient, GitHubError, PullRequest, RevertOutcome
from buildbot_revert.logline import say
from buildbot_revert.plugin.config import Mode, Settings
from buildbot_revert.plugin.filing_steps import ACTIONABLE as _ACTIONABLE
from buildbot_revert.plugin.filing_steps import Steps
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import Entry, QualifiedBuilder
from buildbot_revert.plugin.notify import Notice, NoticeKind
from buildbot_revert.plugin.permissions import Standing, epoch_of
from buildbot_revert.plugin.ports import Clock

_DAY = 86400.0


class Filer:
    """Acts on the tracker's events for one repository."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        client: GitHubClient | None,
        *,
        clock: Clock,
        master_name: str = "",
        build_url: Callable[[str, int], str | None] = lambda builder, number: None,
        master_url: str | None = None,
        notify: Callable[[Notice], None] | None = None,
    ) -> None:
        self.settings = settings
        # Webhook announcements (plugin.notify): queued, never waited for.
        self.notify = notify or (lambda notice: None)
        self.ledger = ledger
        self.client = client
        self.clock = clock
        self.master_name = master_name
        self.build_url = build_url
        self.master_url = master_url
        self._busy: set[str] = set()
        # Through a lambda: a test (or the reporter) may swap ``notify`` later.
        self.steps = Steps(
            settings,
            ledger,
            client,
            clock=clock,
            notify=lambda notice: self.notify(notice),
            build_url=build_url,
            master_url=master_url,
        )
        # The post-verdict machine that decides the daily cap, the grace
        # period and objections: the pipeline hands in its own; a filer used
        # alone asks one made of its settings.
        alone = PostVerdict(settings.machine)
        self.machine_of: Callable[[], PostVerdict] = lambda: alone
        # Who may object or opt out (the core's rule; roles asked of GitHub).
        self.standing = (
            None if client is None else Standing(client, settings.objection_permission, clock=clock)
        )

    # -- recording the facts ------------------------------------------------------

    async def record(self, event: Verdict | Streak, *, claim: bool = True) -> str | None:
        """Write what ``event`` tells the ledger; return a revision to act on, if any.

        ``claim`` False (a replay of builds the plugin may never have seen
        live) records qualifications and streak ends of revisions already in
        the ledger, and claims nothing new.
        """
        what = grace.fact(event)
        if isinstance(what, StreakEnd):
            if what.ended_at is not None:
                await self.ledger.builders.streak_ended(
                    what.builder, what.first_failing_build, what.ended_at
                )
            return None
        if not isinstance(what, Qualification) or not isinstance(event, Verdict):
            return None
        won = False
        if what.proposer and claim:
            won = await self._claim(event, what)
        entry = await self.ledger.get(what.revision)
        if entry is None:
            return None
        links = tuple((n, self.build_url(what.builder, n)) for n in what.failing_builds)
        new = await self.ledger.builders.qualify(
            what.revision, what.builder, what.first_failing_build, links, what.qualified_at
        )
        if won:
            return what.revision
        if what.proposer and claim:
            say(f"buildbot-revert: {what.revision[:12]} is already in the ledger; not acting again")
        if new and entry.state == State.FILED:
            return what.revision  # a builder to name on the revert PR
        return None

    async def _claim(self, verdict: Verdict, what: Qualification) -> bool:
        suspect = verdict.suspect
        assert suspect is not None
        now = self.clock.seconds()
        won: bool = await self.ledger.claim(
            what.revision,
            builder=what.builder,
            build_number=what.first_failing_build,
            mode=self.settings.mode.value,
            master=self.master_name,
            now=now,
            decided_at=what.qualified_at,
            detail=verdict.explanation,
            title=suspect.title,
            explanation=verdict.explanation,
            evidence=verdict.evidence,
        )
        if not won:
            return False
        claimed = lifecycle.after(
            lifecycle.INITIAL, lifecycle.Claimed(dry_run=self.settings.mode is Mode.DRY_RUN)
        )
        if claimed.moved:
            # Dry-run: the core says the decision is recorded and nothing more is done.
            await self.ledger.transition(
                what.revision, (claimed.before,), state=claimed.state, updated_at=now
            )
            say(
                f"buildbot-revert: dry-run: would revert {what.revision[:12]} "
                f"({what.builder} builds {list(what.failing_builds)}): {verdict.explanation}"
            )
            self.notify(
                Notice(
                    NoticeKind.PROPOSED,
                    what.revision,
                    suspect.title,
                    suspect.author,
                    (what.builder,),
                    self.build_url(what.builder, what.first_failing_build),
                    "dry-run: nothing is done on GitHub",
                )
            )
            return False
        return True

    async def handle(self, verdict: Verdict) -> Entry | None:
        """Record one verdict and carry it out now; the revision's ledger row as it ends up."""
        revision = await self.record(verdict)
        if revision is not None:
            await self.act(revision)
        suspect = verdict.suspect
        return None if suspect is None else await self._entry(suspect.revision)

    async def _entry(self, revision: str) -> Entry | None:
        entry: Entry | None = await self.ledger.get(revision)
        return entry

    # -- the periodic check -----------------------------------------------------

    async def check_pending(self, *, starting: bool = False) -> None:
        """End grace periods that are due; retry rows that failed; recover stale filings.

        ``starting``: this master has just started, so a ``filing`` row it
        owns was interrupted by the previous process.
        """
        if self.settings.mode is Mode.DRY_RUN or self.client is None:
            return
        now = self.clock.seconds()
        for entry in await self.ledger.entries((State.FILING,)):
            mine = entry.master == self.master_name
            if actions.stale_filing(mine, entry.updated_at, now, starting):
                await self._recover(entry)
        for entry in await self.ledger.entries(_ACTIONABLE):
            mine = entry.master == self.master_name
            if actions.due(entry.state, mine, entry.updated_at, entry.due_at, now):
                await self.act(entry.revision)
        for revision in await self.ledger.builders.unannounced():
            await self.act(revision)

    # -- acting -----------------------------------------------------------------

    async def act(self, revision: str) -> None:
        """Take the revision's next step on GitHub; errors are contained and retried."""
        if revision in self._busy or self.client is None:
            return
        if self.settings.mode is Mode.DRY_RUN:
            return
        self._busy.add(revision)
        try:
            await self._act_once(revision)
        except Exception as exc:
            if isinstance(exc, GitHubError):
                # The client redacts secrets from its messages.
                say(f"buildbot-revert: GitHub failed for {revision[:12]}: {exc}")
                detail = f"GitHub error: {exc}"
            else:
                _log_failure(exc, f"buildbot-revert: acting on {revision[:12]} failed")
                detail = f"error: {type(exc).__name__}: {exc}"
            # A write that failed half-way is found by the next attempt's look.
            await self.ledger.release(revision, detail[:2000], self.clock.seconds())
        finally:
            self._busy.discard(revision)

    async def _recover(self, entry: Entry) -> None:
        """A ``filing`` row nothing works on any more: look on GitHub, then finish or file."""
        assert self.client is not None
        if entry.revision in self._busy:
            return  # this process is filing it right now: not abandoned
        now = self.clock.seconds()
        # Take the row over (one master wins), so nobody else recovers it meanwhile.
        taken = lifecycle.after(entry.state, lifecycle.Recovered())
        if not await self.ledger.transition(
            entry.revision,
            (taken.before,),
            updated_before=entry.updated_at + 1e-3,
            state=taken.state,
            updated_at=now,
        ):
            return
        say(
            f"buildbot-revert: {entry.revision[:12]} was left 'filing' "
            f"(by {entry.master or 'a master'}); looking on GitHub for its revert PR"
        )
        self._busy.add(entry.revision)
        try:
            qualified = await self.ledger.builders.of(entry.revision)
            pull, ctx = await self._pull_and_context(entry, qualified)
            found = (
                await self.client.find_revert_pull(entry.revision, pull)
                if pull is not None
                else None
            )
            if pull is not None and found is not None:
                how = RevertOutcome("existing", found)
                await self.steps.filing_done(entry.revision, pull, ctx, how, "recovered", now)
                return
        except Exception as exc:
            _log_failure(exc, f"buildbot-revert: recovering {entry.revision[:12]} failed")
        finally:
            self._busy.discard(entry.revision)
        await self.ledger.release(
            entry.revision, "recovered: no revert PR was found; filing again", self.clock.seconds()
        )
        await self.act(entry.revision)

    async def _pull_and_context(
        self, entry: Entry, qualified: list[QualifiedBuilder]
    ) -> tuple[PullRequest | None, pr_text.RevertContext]:
        assert self.client is not None
        pull = await self.client.pull_for_commit(entry.revision, entry.title or None)
        return pull, self.steps.context(entry, qualified, pull)

    async def _act_once(self, revision: str) -> None:
        assert self.client is not None
        entry = await self.ledger.get(revision)
        if entry is None:
            return
        if entry.state == State.FILED:
            await self.steps.announce(entry)
            return
        if entry.state not in _ACTIONABLE:
            return
        qualified = await self.ledger.builders.of(revision)
        machine = self.machine_of()
        said: File | Withdraw | None = None
        if entry.state == State.PENDING:
            facts_now = tuple(Qualified(q.qualified_at, q.ended_at) for q in qualified)
            over = machine.grace_over(GraceCheck(revision, facts_now, self.clock.seconds()))
            if isinstance(over, KeepWaiting):
                # Another builder's grace period runs on: look again at its deadline.
                if over.until is not None:
                    await self.ledger.transition(revision, (State.PENDING,), due_at=over.until)
                return
            said = over
        pull, ctx = await self._pull_and_context(entry, qualified)
        facts = await self._facts(entry, pull)
        if said is not None:
            if isinstance(said, File) and await self._objected(entry, pull, said):
                said = machine.objection(Objection(revision))
            plan = actions.after_grace(said, facts)
        else:
            plan = actions.plan(facts)
        await self.steps.perform(plan, revision, entry, ctx, pull)

    async def _objected(self, entry: Entry, pull: PullRequest | None, said: File) -> bool:
        """Whether someone with standing objected on the culprit PR in time (others are logged).

        In time: after our warning comment (the ledger's ``comment_url``; its
        ``created_at`` is GitHub's) and by the deadline ``said`` files at.
        """
        if pull is None or self.standing is None or self.client is None:
            return False
        comments = await self.client.comments(pull.number)
        warned = [c.created_at for c in comments if entry.comment_url == c.html_url]
        window = grace.objection_window(
            epoch_of(warned[0]) if warned else None,
            started_at=entry.decided_at,
            closes=said.at if said.at is not None else self.clock.seconds(),
        )
        words = self.settings.objection_words
        return await self.standing.objected(entry.revision, pull, comments, words, window)

    async def _facts(self, entry: Entry, pull: PullRequest | None) -> Facts:
        """What GitHub and the machine (the daily cap, the grace period) say of the revision."""
        assert self.client is not None
        revision = entry.revision
        existing = RevertState.NONE
        labels: tuple[str, ...] = ()
        if pull is not None:
            labels = pull.labels
            label = self.settings.opt_out_label
            if label in labels and not await self._opted_out(revision, pull):
                # Set by someone without standing: as if it were not there.
                labels = tuple(x for x in labels if x != label)
            found = await self.client.find_revert_pull(revision, pull)
            if found is not None:
                existing = actions.revert_state(found.state, found.merged)
        now = self.clock.seconds()
        filed = await self.ledger.filed_since(now - _DAY)
        said = self.machine_of().filing(
            Filing(revision, now, filed_last_day=filed, qualified_at=entry.decided_at)
        )
        return Facts(
            mode=self.settings.mode.value,
            has_pull=pull is not None,
            labels=labels,
            opt_out_label=self.settings.opt_out_label,
            existing=existing,
            capped=said.why if isinstance(said, CommentOnly) else None,
            grace_until=said.until if isinstance(said, CommentFirst) else None,
        )

    async def _opted_out(self, revision: str, pull: PullRequest) -> bool:
        """Whether the opt-out label on ``pull`` was set by someone with standing."""
        assert self.standing is not None
        return await self.standing.opted_out(revision, pull, self.settings.opt_out_label)


def _log_failure(failure: BaseException, why: str) -> None:
    """``log.err`` with a traceback, for errors that are bugs or surprises."""
    # twisted.python.log.err has no annotations.
    log.err(failure, why)  # type: ignore[no-untyped-call]
