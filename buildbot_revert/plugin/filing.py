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
needs, and perform the step it plans: record, comment, wait out a grace
period, open the revert PR and comment on the culprit with its link, or
name on the revert PR the builders that qualified after it was opened.

Every text is written from the ledger alone (title, explanation, evidence,
and the builders that qualified, with links to their failing builds), so it
is the same whether or not the master restarted in between; a grace period
is decided by the core's rule from the recorded qualifications and streak
ends, never from what a builder looks like when the timer fires.

Every failure is contained here: any error while acting (GitHub's, or a
bug's) returns a ``filing`` row to where it came from with the error in
``detail`` (no secret can be in it: the client redacts), and
:meth:`Filer.check_pending` retries it later; a ``filing`` row that a crash
left behind is found stale, and the PR it may have opened is looked for on
GitHub before anything is filed again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.python import log

from buildbot_revert.core import actions, grace, pr_text
from buildbot_revert.core.actions import Facts, Plan, RevertState, Step
from buildbot_revert.core.grace import GraceDecision, Qualification, Qualified, StreakEnd
from buildbot_revert.core.verdicts import Streak, Verdict
from buildbot_revert.github import GitHubClient, GitHubError, PullRequest, RevertOutcome
from buildbot_revert.plugin.config import Mode, Settings
from buildbot_revert.plugin.ledger import Entry, Ledger, LedgerState, QualifiedBuilder
from buildbot_revert.plugin.notify import Notice, NoticeKind

_DAY = 86400.0
# The rows a step may still move: claimed, or waiting out a grace period.
_ACTIONABLE = (LedgerState.PROPOSED, LedgerState.PENDING)


class Filer:
    """Acts on the tracker's events for one repository."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        client: GitHubClient | None,
        *,
        clock: Any,
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
                await self.ledger.streak_ended(
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
        new = await self.ledger.qualify(
            what.revision, what.builder, what.first_failing_build, links, what.qualified_at
        )
        if won:
            return what.revision
        if what.proposer and claim:
            log.msg(
                f"buildbot-revert: {what.revision[:12]} is already in the ledger; not acting again"
            )
        if new and entry.state == LedgerState.FILED:
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
        if won and self.settings.mode is Mode.DRY_RUN:
            await self.ledger.transition(
                what.revision, (LedgerState.PROPOSED,), state=LedgerState.RECORDED, updated_at=now
            )
            log.msg(
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
        return won

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
        for entry in await self.ledger.entries((LedgerState.FILING,)):
            mine = entry.master == self.master_name
            if actions.stale_filing(mine, entry.updated_at, now, starting):
                await self._recover(entry)
        for entry in await self.ledger.entries(_ACTIONABLE):
            mine = entry.master == self.master_name
            if actions.due(entry.state, mine, entry.updated_at, entry.due_at, now):
                await self.act(entry.revision)
        for revision in await self.ledger.unannounced():
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
                log.msg(f"buildbot-revert: GitHub failed for {revision[:12]}: {exc}")
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
        if not await self.ledger.transition(
            entry.revision,
            (LedgerState.FILING,),
            updated_before=entry.updated_at + 1e-3,
            state=LedgerState.FILING,
            updated_at=now,
        ):
            return
        log.msg(
            f"buildbot-revert: {entry.revision[:12]} was left 'filing' "
            f"(by {entry.master or 'a master'}); looking on GitHub for its revert PR"
        )
        self._busy.add(entry.revision)
        try:
            qualified = await self.ledger.qualified(entry.revision)
            pull, ctx = await self._pull_and_context(entry, qualified)
            found = (
                await self.client.find_revert_pull(entry.revision, pull)
                if pull is not None
                else None
            )
            if pull is not None and found is not None:
                how = RevertOutcome("existing", found)
                await self._filing_done(entry.revision, pull, ctx, how, "recovered", now)
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
        return pull, self._context(entry, qualified, pull)

    async def _act_once(self, revision: str) -> None:
        assert self.client is not None
        entry = await self.ledger.get(revision)
        if entry is None:
            return
        if entry.state == LedgerState.FILED:
            await self._announce(entry)
            return
        if entry.state not in _ACTIONABLE:
            return
        qualified = await self.ledger.qualified(revision)
        fate = self._grace(qualified) if entry.state == LedgerState.PENDING else None
        if fate is not None and fate.decision is GraceDecision.WAIT:
            # Another builder's grace period runs on: look again at its deadline.
            if fate.next_at is not None:
                await self.ledger.transition(revision, (LedgerState.PENDING,), due_at=fate.next_at)
            return
        pull, ctx = await self._pull_and_context(entry, qualified)
        facts = await self._facts(revision, pull)
        if fate is not None:
            comments = await self.client.comments(pull.number) if pull is not None else []
            objected = actions.objected(
                ((c.author, c.body) for c in comments), self.settings.objection_words
            )
            plan = actions.after_grace(fate, facts, objected)
        else:
            plan = actions.plan(facts)
        await self._perform(plan, revision, entry, ctx, pull)

    def _grace(self, qualified: list[QualifiedBuilder]) -> grace.GraceOutcome:
        """The core's grace rule over every builder recorded as qualified."""
        return grace.outcome(
            (Qualified(q.qualified_at, q.ended_at) for q in qualified),
            self.settings.grace_period,
            self.clock.seconds(),
        )

    async def _facts(self, revision: str, pull: PullRequest | None) -> Facts:
        assert self.client is not None
        existing = RevertState.NONE
        labels: tuple[str, ...] = ()
        if pull is not None:
            labels = pull.labels
            found = await self.client.find_revert_pull(revision, pull)
            if found is not None:
                existing = actions.revert_state(found.state, found.merged)
        filed = await self.ledger.filed_since(self.clock.seconds() - _DAY)
        return Facts(
            mode=self.settings.mode.value,
            has_pull=pull is not None,
            labels=labels,
            opt_out_label=self.settings.opt_out_label,
            existing=existing,
            filed_last_day=filed,
            daily_cap=self.settings.daily_cap,
            grace_period=self.settings.grace_period,
        )

    async def _perform(
        self,
        plan: Plan,
        revision: str,
        entry: Entry,
        ctx: pr_text.RevertContext,
        pull: PullRequest | None,
    ) -> None:
        now = self.clock.seconds()
        log.msg(f"buildbot-revert: {revision[:12]}: {plan.step.value}: {plan.why}")
        # What every outcome of the step writes to the row, besides its own fields.
        step_fields: dict[str, Any] = {"updated_at": now, "detail": plan.why}
        if pull is not None:
            step_fields["culprit_pr"] = pull.number
        if plan.step is Step.SKIP:
            await self.ledger.transition(
                revision, _ACTIONABLE, state=LedgerState.SKIPPED, **step_fields
            )
        elif plan.step is Step.WITHDRAW:
            await self.ledger.transition(
                revision, _ACTIONABLE, state=LedgerState.WITHDRAWN, **step_fields
            )
        elif pull is None:
            raise AssertionError(f"{plan.step.value} needs the culprit pull request")
        elif plan.step is Step.ADOPT:
            await self._adopt(revision, pull, step_fields)
        elif plan.step is Step.COMMENT:
            await self._comment_only(revision, pull, ctx, plan, step_fields)
        elif plan.step is Step.WAIT:
            await self._wait(revision, entry, pull, ctx, step_fields)
        else:
            await self._file_revert(revision, pull, ctx, plan, now)

    async def _adopt(self, revision: str, pull: PullRequest, step_fields: dict[str, Any]) -> None:
        """A revert PR already exists: record it as ours."""
        assert self.client is not None
        found = await self.client.find_revert_pull(revision, pull)
        if await self.ledger.transition(
            revision,
            _ACTIONABLE,
            state=LedgerState.FILED,
            revert_pr=found.number if found else None,
            revert_url=found.html_url if found else None,
            **step_fields,
        ):
            # Its text is not ours: builders are named from now on, not before.
            await self._mark_announced(revision)

    async def _comment_only(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        plan: Plan,
        step_fields: dict[str, Any],
    ) -> None:
        """Tell the culprit PR what was found, and stop there."""
        assert self.client is not None
        comment = await self.client.comment(pull.number, pr_text.notice_comment(ctx, plan.why))
        if await self.ledger.transition(
            revision,
            _ACTIONABLE,
            state=LedgerState.COMMENTED,
            comment_url=comment.html_url,
            **step_fields,
        ):
            self.notify(_notice(NoticeKind.PROPOSED, ctx, pull, comment.html_url, plan.why))

    async def _wait(
        self,
        revision: str,
        entry: Entry,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        step_fields: dict[str, Any],
    ) -> None:
        """Start the grace period with a warning on the culprit PR, or keep waiting."""
        assert self.client is not None
        if entry.state == LedgerState.PENDING:
            await self.ledger.transition(
                revision, (LedgerState.PENDING,), updated_at=step_fields["updated_at"]
            )
            return
        body = pr_text.warning_comment(
            ctx, self.settings.grace_period, self.settings.objection_words[0]
        )
        comment = await self.client.comment(pull.number, body)
        await self.ledger.transition(
            revision,
            (LedgerState.PROPOSED,),
            state=LedgerState.PENDING,
            comment_url=comment.html_url,
            due_at=grace.deadline(entry.decided_at, self.settings.grace_period),
            **step_fields,
        )

    async def _file_revert(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        plan: Plan,
        now: float,
    ) -> None:
        """Open the revert PR and tell the culprit PR, or say why a human has to."""
        assert self.client is not None
        # Take the row from proposed/pending to filing first, so that a second
        # master whose grace period also ended cannot file it too.
        if not await self.ledger.transition(
            revision, _ACTIONABLE, state=LedgerState.FILING, filed_at=now, updated_at=now
        ):
            return
        outcome = await self.client.open_revert(
            pull, pr_text.revert_title(ctx), pr_text.revert_body(ctx), draft=self.settings.draft
        )
        await self._filing_done(revision, pull, ctx, outcome, plan.why, now)

    async def _filing_done(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        outcome: RevertOutcome,
        why: str,
        now: float,
    ) -> None:
        """The ``filing`` row's end, once GitHub said what exists (filed now, or before)."""
        revert = outcome.pull
        if revert is None:
            await self._manual_revert_needed(revision, pull, ctx, outcome, now)
        elif (
            outcome.how == "existing"
            and actions.revert_state(revert.state, revert.merged) is RevertState.CLOSED
        ):
            await self.ledger.transition(
                revision,
                (LedgerState.FILING,),
                state=LedgerState.CLOSED,
                filed_at=None,
                revert_pr=revert.number,
                revert_url=revert.html_url,
                updated_at=now,
            )
        else:
            await self._filed(revision, pull, ctx, revert, f"{outcome.how}: {why}", now)

    async def _manual_revert_needed(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        outcome: RevertOutcome,
        now: float,
    ) -> None:
        """No revert could be built: say why on the culprit PR and file nothing."""
        assert self.client is not None
        body = pr_text.manual_comment(ctx, outcome.reason, outcome.files)
        comment = await self.client.comment(pull.number, body)
        await self.ledger.transition(
            revision,
            (LedgerState.FILING,),
            state=LedgerState.SKIPPED,
            filed_at=None,
            comment_url=comment.html_url,
            detail=f"manual revert needed: {outcome.reason}"[:2000],
            updated_at=now,
        )

    async def _filed(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        revert: PullRequest,
        detail: str,
        now: float,
    ) -> None:
        """The revert PR is open: label it and link it from the culprit PR."""
        assert self.client is not None
        if self.settings.revert_labels:
            await self.client.add_labels(revert.number, self.settings.revert_labels)
        body = pr_text.reverted_comment(ctx, revert.html_url, revert.number)
        comment = await self.client.comment(pull.number, body)
        named = {link.builder for link in ctx.builds}
        if await self.ledger.transition(
            revision,
            (LedgerState.FILING,),
            state=LedgerState.FILED,
            culprit_pr=pull.number,
            revert_pr=revert.number,
            revert_url=revert.html_url,
            comment_url=comment.html_url,
            detail=detail,
            updated_at=now,
        ):
            await self._mark_announced(revision, named)
            self.notify(_notice(NoticeKind.FILED, ctx, pull, revert.html_url, detail))

    # -- builders that qualify after the revert PR is open ------------------------------

    async def _announce(self, entry: Entry) -> None:
        """Name on the revert PR, in one comment, the builders it does not name yet."""
        assert self.client is not None
        if entry.revert_pr is None:
            return
        late = [q for q in await self.ledger.qualified(entry.revision) if not q.announced]
        # Take them first (a compare-and-set per builder): of two masters
        # announcing at once, one posts each builder; a failure hands them back.
        taken = set(
            await self.ledger.announce(entry.revision, [(q.builder, q.first_build) for q in late])
        )
        late = [q for q in late if (q.builder, q.first_build) in taken]
        if not late:
            return
        body = pr_text.more_builders_comment(_links(late), self.settings.policy.failures)
        try:
            await self.client.comment(entry.revert_pr, body)
        except BaseException:
            await self.ledger.unannounce(entry.revision, taken)
            raise
        log.msg(
            f"buildbot-revert: {entry.revision[:12]}: named {len(late)} more builder(s) "
            f"on revert PR #{entry.revert_pr}"
        )

    async def _mark_announced(self, revision: str, builders: set[str] | None = None) -> None:
        qualified = await self.ledger.qualified(revision)
        await self.ledger.announce(
            revision,
            [
                (q.builder, q.first_build)
                for q in qualified
                if builders is None or q.builder in builders
            ],
        )

    # -- the texts ----------------------------------------------------------------

    def _context(
        self, entry: Entry, qualified: list[QualifiedBuilder], pull: PullRequest | None
    ) -> pr_text.RevertContext:
        """What the texts say, from the ledger alone (and GitHub's PR, for its author)."""
        if qualified:
            links = _links(qualified)
        else:
            # A row from before the ledger kept its builders.
            links = (
                pr_text.BuildLink(
                    entry.builder,
                    entry.build_number,
                    self.build_url(entry.builder, entry.build_number),
                ),
            )
        return pr_text.RevertContext(
            revision=entry.revision,
            title=entry.title or "",
            pr_number=pull.number if pull is not None else entry.culprit_pr,
            author_login=pull.author if pull is not None else None,
            builds=links,
            failures=self.settings.policy.failures,
            explanation=entry.explanation or entry.detail,
            evidence=entry.evidence_items,
            master_url=self.master_url,
        )


def _notice(
    kind: NoticeKind, ctx: pr_text.RevertContext, pull: PullRequest, url: str, why: str
) -> Notice:
    """The webhook announcement of a step on GitHub (the culprit PR's author is GitHub's)."""
    return Notice(
        kind,
        ctx.revision,
        ctx.title,
        pull.author,
        tuple(dict.fromkeys(link.builder for link in ctx.builds)),
        url,
        why,
        author_login=pull.author,
    )


def _links(qualified: list[QualifiedBuilder]) -> tuple[pr_text.BuildLink, ...]:
    """The failing builds of each qualified builder, first to qualify first."""
    return tuple(
        pr_text.BuildLink(q.builder, number, url) for q in qualified for number, url in q.builds
    )


def _log_failure(failure: BaseException, why: str) -> None:
    """``log.err`` with a traceback, for errors that are bugs or surprises."""
    # twisted.python.log.err has no annotations.
    log.err(failure, why)  # type: ignore[no-untyped-call]
