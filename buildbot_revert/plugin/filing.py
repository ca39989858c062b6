"""The reporter's hands: carry out a revert verdict on GitHub and in the ledger.

:class:`Filer` takes a REVERT verdict the tracker returned, claims its
revision in the ledger (only the claimant acts: one PR per revision across
builders, restarts and masters), fetches the facts
:mod:`buildbot_revert.core.actions` needs from GitHub, and performs the
step it plans: record, comment, wait out a grace period, or open the revert
PR and comment on the culprit with its link.  It knows nothing about
Buildbot: the reporter hands it verdicts and links, and tests drive it
directly against the GitHub stand-in.

Every failure is contained here: a GitHub error leaves the row ``proposed``
with the error in ``detail`` (no secret can be in it: the client redacts),
and :meth:`Filer.check_pending` retries it later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.python import log

from buildbot_revert.core import actions, grace, pr_text
from buildbot_revert.core.actions import Facts, Plan, RevertState, Step
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.github import GitHubClient, GitHubError, PullRequest, RevertOutcome
from buildbot_revert.plugin.config import Mode, Settings
from buildbot_revert.plugin.ledger import Entry, Ledger, LedgerState

_DAY = 86400.0
# The rows a step may still move: claimed, or waiting out a grace period.
_ACTIONABLE = (LedgerState.PROPOSED, LedgerState.PENDING)


class Filer:
    """Acts on revert verdicts for one repository."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        client: GitHubClient | None,
        *,
        clock: Any,
        master_name: str = "",
        build_url: Callable[[str, int], str | None] = lambda builder, number: None,
        is_red: Callable[[str], bool] = lambda builder: True,
        master_url: str | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.client = client
        self.clock = clock
        self.master_name = master_name
        self.build_url = build_url
        self.is_red = is_red
        self.master_url = master_url
        # revision -> the context of the verdict, for texts written later.
        self._contexts: dict[str, pr_text.RevertContext] = {}
        self._busy: set[str] = set()

    # -- verdicts -------------------------------------------------------------

    def context(self, verdict: Verdict) -> pr_text.RevertContext:
        request = verdict.request
        assert request is not None and verdict.suspect is not None
        links = tuple(
            pr_text.BuildLink(request.builder, n, self.build_url(request.builder, n))
            for n in request.failing_builds
        )
        return pr_text.RevertContext(
            revision=request.revision,
            title=verdict.suspect.title,
            pr_number=verdict.suspect.pr_number,
            author_login=None,
            builds=links,
            failures=len(request.failing_builds),
            explanation=verdict.explanation,
            evidence=tuple(getattr(verdict, "evidence", ()) or ()),
            master_url=self.master_url,
        )

    async def handle(self, verdict: Verdict) -> Entry | None:
        """Carry out one REVERT verdict; return the ledger row as it ends up."""
        if verdict.reason is not Reason.REVERT or verdict.request is None:
            return None
        request = verdict.request
        revision = request.revision
        now = self.clock.seconds()
        won = await self.ledger.claim(
            revision,
            builder=request.builder,
            build_number=request.build_number,
            mode=self.settings.mode.value,
            master=self.master_name,
            now=now,
            detail=verdict.explanation,
        )
        if not won:
            log.msg(f"buildbot-revert: {revision[:12]} is already in the ledger; not acting again")
            return await self._entry(revision)
        self._contexts[revision] = self.context(verdict)
        if self.settings.mode is Mode.DRY_RUN:
            await self.ledger.transition(
                revision, (LedgerState.PROPOSED,), state=LedgerState.RECORDED, updated_at=now
            )
            log.msg(
                f"buildbot-revert: dry-run: would revert {revision[:12]} "
                f"({request.builder} builds {list(request.failing_builds)}): "
                f"{verdict.explanation}"
            )
            return await self._entry(revision)
        await self._act(revision)
        return await self._entry(revision)

    async def _entry(self, revision: str) -> Entry | None:
        entry: Entry | None = await self.ledger.get(revision)
        return entry

    # -- the periodic check -----------------------------------------------------

    async def check_pending(self) -> None:
        """End grace periods that are due; retry rows GitHub failed on earlier."""
        if self.settings.mode is Mode.DRY_RUN:
            return
        now = self.clock.seconds()
        for entry in await self.ledger.entries(_ACTIONABLE):
            mine = entry.master == self.master_name
            if actions.due(entry.state, mine, entry.updated_at, entry.due_at, now):
                await self._act(entry.revision)

    # -- acting -----------------------------------------------------------------

    async def _act(self, revision: str) -> None:
        if revision in self._busy:
            return
        self._busy.add(revision)
        try:
            await self._act_once(revision)
        except GitHubError as exc:
            # The client redacts secrets from its messages.
            log.msg(f"buildbot-revert: GitHub failed for {revision[:12]}: {exc}")
            detail = f"GitHub error: {exc}"[:2000]
            now = self.clock.seconds()
            # A write that failed half-way is found by the next attempt's look.
            await self.ledger.transition(
                revision,
                (LedgerState.FILING,),
                state=LedgerState.PROPOSED,
                filed_at=None,
                detail=detail,
                updated_at=now,
            )
            await self.ledger.transition(revision, _ACTIONABLE, detail=detail, updated_at=now)
        finally:
            self._busy.discard(revision)

    async def _act_once(self, revision: str) -> None:
        assert self.client is not None
        entry = await self.ledger.get(revision)
        if entry is None:
            return
        ctx = self._contexts.get(revision)
        if ctx is None:
            ctx = self._context_from_entry(entry)
        pull = await self.client.pull_for_commit(revision, ctx.title or None)
        if pull is not None:
            ctx = ctx._replace(author_login=pull.author, pr_number=pull.number)
            self._contexts[revision] = ctx
        facts = await self._facts(revision, pull)
        if entry.state == LedgerState.PENDING:
            ended = None if self.is_red(entry.builder) else self.clock.seconds()
            decision = grace.decide(
                entry.decided_at, self.settings.grace_period, self.clock.seconds(), ended
            )
            comments = await self.client.comments(pull.number) if pull is not None else []
            objected = actions.objected(
                ((c.author, c.body) for c in comments), self.settings.objection_words
            )
            plan = actions.after_grace(decision, facts, objected)
        else:
            plan = actions.plan(facts)
        await self._perform(plan, revision, entry, ctx, pull)

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
        await self.ledger.transition(
            revision,
            _ACTIONABLE,
            state=LedgerState.FILED,
            revert_pr=found.number if found else None,
            revert_url=found.html_url if found else None,
            **step_fields,
        )

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
        await self.ledger.transition(
            revision,
            _ACTIONABLE,
            state=LedgerState.COMMENTED,
            comment_url=comment.html_url,
            **step_fields,
        )

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
            await self._filed(revision, pull, ctx, revert, f"{outcome.how}: {plan.why}", now)

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
        await self.ledger.transition(
            revision,
            (LedgerState.FILING,),
            state=LedgerState.FILED,
            revert_pr=revert.number,
            revert_url=revert.html_url,
            comment_url=comment.html_url,
            detail=detail,
            updated_at=now,
        )

    def _context_from_entry(self, entry: Entry) -> pr_text.RevertContext:
        """A context rebuilt from the ledger (after a restart the verdict is gone)."""
        return pr_text.RevertContext(
            revision=entry.revision,
            title="",
            pr_number=entry.culprit_pr,
            author_login=None,
            builds=(
                pr_text.BuildLink(
                    entry.builder,
                    entry.build_number,
                    self.build_url(entry.builder, entry.build_number),
                ),
            ),
            failures=self.settings.policy.failures,
            explanation=entry.detail,
            master_url=self.master_url,
        )
