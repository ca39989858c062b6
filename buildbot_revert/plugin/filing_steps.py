"""The steps the filer takes on GitHub once the core planned one, and the texts they post.

:class:`Steps` carries out a :class:`~buildbot_revert.core.actions.Plan` for a
claimed revision (:meth:`Steps.perform`): skip or withdraw it in the ledger,
adopt an existing revert PR, comment only, start a grace period with a
warning, or open the revert PR and link it from the culprit.  It also ends a
``filing`` row once GitHub said what exists (:meth:`Steps.filing_done`), names
on the revert PR the builders that qualified after it was opened
(:meth:`Steps.announce`), and builds every text from the ledger alone
(:meth:`Steps.context`).  Deciding *which* step is the core's
(:mod:`~buildbot_revert.core.actions`, asked by :mod:`.filing`), and so is the
state each step leaves the row in (:mod:`~buildbot_revert.core.lifecycle`:
``StepTaken``, ``Opened``); this module carries them out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from buildbot_revert.core import actions, lifecycle, pr_text
from buildbot_revert.core.actions import Plan, Step
from buildbot_revert.core.lifecycle import State
from buildbot_revert.github import GitHubClient, PullRequest, RevertOutcome
from buildbot_revert.logline import say
from buildbot_revert.plugin.config import Settings
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import Entry, QualifiedBuilder
from buildbot_revert.plugin.notify import Notice, NoticeKind
from buildbot_revert.plugin.ports import Clock

# The rows a step may still move (claimed, or waiting out a grace period): the core's.
ACTIONABLE = lifecycle.accepting(lifecycle.StepTaken)


class Steps:
    """Performs the planned step for one revision on GitHub and in the ledger."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        client: GitHubClient | None,
        *,
        clock: Clock,
        notify: Callable[[Notice], None],
        build_url: Callable[[str, int], str | None],
        master_url: str | None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.client = client
        self.clock = clock
        self.notify = notify
        self.build_url = build_url
        self.master_url = master_url

    async def perform(
        self,
        plan: Plan,
        revision: str,
        entry: Entry,
        ctx: pr_text.RevertContext,
        pull: PullRequest | None,
    ) -> None:
        """Carry out ``plan`` for ``revision``: skip, withdraw, adopt, comment, wait or file."""
        now = self.clock.seconds()
        say(f"buildbot-revert: {revision[:12]}: {plan.step.value}: {plan.why}")
        # The core says which state the step leaves the row in; this only carries it out.
        moved = lifecycle.after(entry.state, lifecycle.StepTaken(plan.step))
        # What every outcome of the step writes to the row, besides its own fields
        # (column values by name, as Ledger.transition takes them).
        step_fields: dict[str, Any] = {"updated_at": now, "detail": plan.why}
        if pull is not None:
            step_fields["culprit_pr"] = pull.number
        ends = {"state": moved.state, **step_fields}
        if plan.step in (Step.SKIP, Step.WITHDRAW):
            await self.ledger.transition(revision, ACTIONABLE, **ends)
        elif pull is None:
            raise AssertionError(f"{plan.step.value} needs the culprit pull request")
        elif plan.step is Step.ADOPT:
            await self._adopt(revision, pull, ends)
        elif plan.step is Step.COMMENT:
            await self._comment_only(revision, pull, ctx, plan, ends)
        elif plan.step is Step.WAIT:
            await self._wait(revision, moved, pull, ctx, plan, step_fields)
        else:
            await self._file_revert(revision, pull, ctx, plan, moved, now)

    async def _adopt(self, revision: str, pull: PullRequest, ends: dict[str, Any]) -> None:
        """A revert PR already exists: record it as ours (``ends``: the row's new fields)."""
        assert self.client is not None
        found = await self.client.find_revert_pull(revision, pull)
        if await self.ledger.transition(
            revision,
            ACTIONABLE,
            revert_pr=found.number if found else None,
            revert_url=found.html_url if found else None,
            **ends,
        ):
            # Its text is not ours: builders are named from now on, not before.
            await self._mark_announced(revision)

    async def _comment_only(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        plan: Plan,
        ends: dict[str, Any],
    ) -> None:
        """Tell the culprit PR what was found, and stop there (``ends``: the row's new fields)."""
        assert self.client is not None
        comment = await self.client.comment(pull.number, pr_text.notice_comment(ctx, plan.why))
        if await self.ledger.transition(
            revision,
            ACTIONABLE,
            comment_url=comment.html_url,
            **ends,
        ):
            self.notify(_notice(NoticeKind.PROPOSED, ctx, pull, comment.html_url, plan.why))

    async def _wait(
        self,
        revision: str,
        moved: lifecycle.Transition,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        plan: Plan,
        step_fields: dict[str, Any],
    ) -> None:
        """Start the grace period with a warning on the culprit PR, or keep waiting.

        The deadline is the machine's (its ``CommentFirst``, in ``plan``).
        """
        assert self.client is not None
        if not moved.moved:
            # Already waiting (the daily cap holds it back): the row only notes the look.
            await self.ledger.transition(
                revision, (moved.before,), updated_at=step_fields["updated_at"]
            )
            return
        body = pr_text.warning_comment(
            ctx, self.settings.machine.grace_period, self.settings.objection_words[0]
        )
        comment = await self.client.comment(pull.number, body)
        await self.ledger.transition(
            revision,
            (moved.before,),
            state=moved.state,
            comment_url=comment.html_url,
            due_at=plan.due_at,
            **step_fields,
        )

    async def _file_revert(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        plan: Plan,
        moved: lifecycle.Transition,
        now: float,
    ) -> None:
        """Open the revert PR and tell the culprit PR, or say why a human has to."""
        assert self.client is not None
        # Take the row from proposed/pending to filing first, so that a second
        # master whose grace period also ended cannot file it too.
        if not await self.ledger.transition(
            revision, ACTIONABLE, state=moved.state, filed_at=now, updated_at=now
        ):
            return
        outcome = await self.client.open_revert(
            pull, pr_text.revert_title(ctx), pr_text.revert_body(ctx), draft=self.settings.draft
        )
        await self.filing_done(revision, pull, ctx, outcome, plan.why, now)

    async def filing_done(
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
        found = None if revert is None else actions.revert_state(revert.state, revert.merged)
        # The core says where the filing ends: filed, closed (a human said no), or skipped.
        opened = lifecycle.after(
            State.FILING, lifecycle.Opened(revert=found, existing=outcome.how == "existing")
        )
        if revert is None:
            await self._manual_revert_needed(revision, pull, ctx, outcome, opened, now)
        elif opened.state is not State.FILED:
            await self.ledger.transition(
                revision,
                (opened.before,),
                state=opened.state,
                filed_at=None,
                revert_pr=revert.number,
                revert_url=revert.html_url,
                updated_at=now,
            )
        else:
            await self._filed(revision, pull, ctx, revert, opened, f"{outcome.how}: {why}", now)

    async def _manual_revert_needed(
        self,
        revision: str,
        pull: PullRequest,
        ctx: pr_text.RevertContext,
        outcome: RevertOutcome,
        opened: lifecycle.Transition,
        now: float,
    ) -> None:
        """No revert could be built: say why on the culprit PR and file nothing."""
        assert self.client is not None
        body = pr_text.manual_comment(ctx, outcome.reason, outcome.files)
        comment = await self.client.comment(pull.number, body)
        await self.ledger.transition(
            revision,
            (opened.before,),
            state=opened.state,
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
        opened: lifecycle.Transition,
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
            (opened.before,),
            state=opened.state,
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

    async def announce(self, entry: Entry) -> None:
        """Name on the revert PR, in one comment, the builders it does not name yet."""
        assert self.client is not None
        if entry.revert_pr is None:
            return
        late = [q for q in await self.ledger.builders.of(entry.revision) if not q.announced]
        # Take them first (a compare-and-set per builder): of two masters
        # announcing at once, one posts each builder; a failure hands them back.
        taken = set(
            await self.ledger.builders.announce(
                entry.revision, [(q.builder, q.first_build) for q in late]
            )
        )
        late = [q for q in late if (q.builder, q.first_build) in taken]
        if not late:
            return
        body = pr_text.more_builders_comment(_links(late), self.settings.policy.failures)
        try:
            await self.client.comment(entry.revert_pr, body)
        except BaseException:
            await self.ledger.builders.unannounce(entry.revision, taken)
            raise
        say(
            f"buildbot-revert: {entry.revision[:12]}: named {len(late)} more builder(s) "
            f"on revert PR #{entry.revert_pr}"
        )

    async def _mark_announced(self, revision: str, builders: set[str] | None = None) -> None:
        qualified = await self.ledger.builders.of(revision)
        await self.ledger.builders.announce(
            revision,
            [
                (q.builder, q.first_build)
                for q in qualified
                if builders is None or q.builder in builders
            ],
        )

    # -- the texts ----------------------------------------------------------------

    def context(
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
