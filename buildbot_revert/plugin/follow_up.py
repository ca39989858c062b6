"""Following each filed revert PR to its end: its builds, its stand-down, its outcome.

The reporter hands :class:`FollowUp` the facts as they come; the decisions
are the core's (:mod:`buildbot_revert.core.outcomes`):

* **Builds of the revert PR.**  A finished build on the branch
  ``refs/pull/N/merge`` (a master like CPython's builds a labelled PR on its
  pull-request builders) of a revert PR in the ledger, on a builder that
  stands for one that qualified (:func:`~buildbot_revert.core.outcomes.counterpart`),
  is recorded (:meth:`FollowUp.revert_build`) and the one summary comment on
  the revert PR is written or edited in place (:meth:`FollowUp.summarise`):
  which failing builders pass with the revert, which still fail.
* **The periodic check** (:meth:`FollowUp.check`, with the filer's): for each
  filed revert PR this master owns whose end is not known, read it on
  GitHub; merged or closed by a human is recorded as such; once every
  qualified builder went green without it (the ledger's streak ends, recorded
  as builds finish; the post-verdict machine's answer to a
  ``RevertFollowed``) it is stood down as configured (comment, then close, or
  label as no longer needed), never closing a PR a human commented on,
  reviewed or pushed to unless ``close_touched``: the machine's answer to a
  ``PullRead``, which the follow-up carries out.  The outcome is stored in
  the ledger (compare-and-set) and announced on the webhooks.
* **Relands.**  A change on the branch that re-applies a merged revert's
  change (git's ``Reapply "..."``) is linked from its ledger row
  (:meth:`FollowUp.note_changes`): a false positive, as the metrics count it.
* **Human reverts.**  A change on the branch that a person wrote as a
  revert (git's ``Revert "..."``, ``This reverts commit <sha>``) of a
  change the bot saw red and did not revert is recorded in the ledger
  (:meth:`FollowUp.note_human_reverts`): a false negative, as the metrics
  count it (:mod:`buildbot_revert.core.human_reverts` decides).
* **Reports of a wrong revert.**  The periodic check also reads each revert
  PR of the last weeks for a maintainer's ``/wrong-revert`` comment or
  ``buildbot-revert: wrong`` label (:mod:`.feedback`), recorded in the ledger.

Errors (GitHub's, the database's) are logged and the next check or build
tries again; nothing here blocks the build lock for GitHub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from buildbot_revert.core import human_reverts, outcomes
from buildbot_revert.core.follow_up_text import (
    NO_LONGER_NEEDED,
    STAND_DOWN_MARKER,
    SUMMARY_MARKER,
    stand_down_comment,
    summary_comment,
)
from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.machine_io import NoLongerNeeded, PullRead, RevertFollowed
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.outcomes import FollowStep, Outcome, RevertBuild, RevertPull
from buildbot_revert.core.post_verdict import PostVerdict
from buildbot_revert.github import GitHubClient, GitHubError
from buildbot_revert.logline import say
from buildbot_revert.plugin.config import Settings
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.feedback import INTERVALS, Feedback
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import Entry
from buildbot_revert.plugin.notify import Notice, NoticeKind
from buildbot_revert.plugin.ports import Clock

Notify = Callable[[Notice], None]
# How many revert commits the follow-up remembers having read (a revert is
# built on every builder: read once, not once per build).
_READ_KEPT = 1000


class FollowUp:
    """Follows the revert PRs of one repository that this master filed."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        client: GitHubClient | None,
        *,
        clock: Clock,
        master_name: str = "",
        build_url: Callable[[str, int], str | None] = lambda builder, number: None,
        notify: Notify | None = None,
        decisions: Decisions | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        # The verdicts: which changes the bot saw red (for human reverts).
        self.decisions = decisions
        # Human revert commits already read, oldest first (a dict keeps the order).
        self._reverts_read: dict[str, None] = {}
        self.client = client
        self.clock = clock
        self.master_name = master_name
        self.build_url = build_url
        self.notify = notify or (lambda notice: None)
        self._summarising: set[str] = set()
        self._again: set[str] = set()
        # Summaries that failed to reach GitHub: the next check writes them.
        self._stale: set[str] = set()
        # Merged reverts whose change may be relanded: (revision, title).
        self._merged: list[tuple[str, str]] = []
        # The post-verdict machine that says when a revert is no longer needed:
        # the pipeline hands in its own; used alone, one of its own.
        alone = PostVerdict(settings.machine)
        self.machine_of: Callable[[], PostVerdict] = lambda: alone
        # Reports of wrong reverts, by whoever may object (the same permission).
        self.feedback = (
            None
            if client is None
            else Feedback(
                ledger,
                client,
                settings.objection_permission,
                clock=clock,
                master_name=master_name,
                every=INTERVALS * settings.follow_interval,
            )
        )

    # -- builds of the revert PR ---------------------------------------------------

    async def revert_build(self, build: Build) -> str | None:
        """Record ``build`` if it is of a revert PR we filed; the revision to summarise."""
        number = outcomes.pull_number_of_branch(build.branch)
        if number is None:
            return None
        entry: Entry | None = await self.ledger.follow.by_revert_pr(number)
        if entry is None:
            return None
        qualified = [q.builder for q in await self.ledger.builders.of(entry.revision)]
        builder = outcomes.counterpart(build.builder, qualified)
        if builder is None:
            return None
        new = await self.ledger.follow.record_build(
            entry.revision,
            builder,
            build.builder,
            build.number,
            build.result,
            self.build_url(build.builder, build.number),
            build.completed_at,
        )
        return entry.revision if new else None

    async def summarise(self, revision: str) -> None:
        """Write (or edit) the one summary comment on the revision's revert PR."""
        if revision in self._summarising:
            self._again.add(revision)  # the running one writes once more
            return
        self._summarising.add(revision)
        try:
            while True:
                self._again.discard(revision)
                try:
                    await self._summarise_once(revision)
                    self._stale.discard(revision)
                except GitHubError as exc:
                    self._stale.add(revision)
                    say(f"buildbot-revert: {revision[:12]}: could not update the summary: {exc}")
                if revision not in self._again:
                    break
        finally:
            self._summarising.discard(revision)

    async def _summarise_once(self, revision: str) -> None:
        entry: Entry | None = await self.ledger.get(revision)
        if entry is None or entry.revert_pr is None or self.client is None:
            return
        qualified = [q.builder for q in await self.ledger.builders.of(revision)]
        rows = await self.ledger.follow.builds(revision)
        summary = outcomes.summarise(
            qualified,
            (RevertBuild(r.builder, r.pr_builder, r.number, r.result, r.url) for r in rows),
        )
        body = summary_comment(summary)
        comment_id = entry.summary_comment_id
        if comment_id is None:
            # A summary written before the ledger kept its id (a crash in between).
            for existing in await self.client.comments(entry.revert_pr):
                if existing.body.startswith(SUMMARY_MARKER):
                    comment_id = existing.id
                    await self.ledger.set_summary_comment(revision, comment_id)
                    break
        if comment_id is None:
            comment = await self.client.comment(entry.revert_pr, body)
            await self.ledger.set_summary_comment(revision, comment.id)
        else:
            await self.client.update_comment(comment_id, body)
        say(
            f"buildbot-revert: {revision[:12]}: revert PR #{entry.revert_pr} builds: "
            f"{len(summary.passing)} pass, {len(summary.failing)} fail, "
            f"{len(summary.waiting)} waiting"
        )

    # -- the periodic check ----------------------------------------------------------

    async def check(self) -> None:
        """Follow every open revert PR this master owns; write summaries that failed."""
        if self.client is None:
            return
        for revision in sorted(self._stale):
            await self.summarise(revision)
        for entry in await self.ledger.follow.unended():
            if entry.master != self.master_name:
                continue  # its owner follows it
            try:
                await self.follow(entry)
            except GitHubError as exc:
                say(f"buildbot-revert: {entry.revision[:12]}: following its revert PR: {exc}")
        self._merged = [
            (e.revision, e.title or "")
            for e in await self.ledger.follow.merged_unrelanded()
            if e.title
        ]
        if self.feedback is not None:
            await self.feedback.check()

    async def follow(self, entry: Entry) -> None:
        """Read the revert PR and take the core's next step."""
        assert self.client is not None and entry.revert_pr is not None
        now = self.clock.seconds()
        number = entry.revert_pr
        qualified = await self.ledger.builders.of(entry.revision)
        filed_at = entry.filed_at if entry.filed_at is not None else entry.decided_at
        builders = tuple(Qualified(q.qualified_at, q.ended_at) for q in qualified)
        said = self.machine_of().followed(RevertFollowed(entry.revision, filed_at, builders, now))
        at = said.at if isinstance(said, NoLongerNeeded) else None
        pull = await self.client.get_pull(number)
        comments = []
        touched = False
        if at is not None and pull.state == "open" and not pull.merged:
            comments = await self.client.comments(number)
            touched = outcomes.touched_by_human(
                pull.author,
                (c.author for c in comments),
                await self.client.review_authors(number),
                await self.client.commit_authors(number),
            )
        pull_now = RevertPull(state=pull.state, merged=pull.merged, touched=touched)
        plan = self.machine_of().pull_read(PullRead(entry.revision, pull_now, at))
        if plan.step is FollowStep.KEEP or plan.outcome is None:
            return
        if plan.step is FollowStep.RECORD:
            if await self.ledger.follow.set_outcome(entry.revision, plan.outcome.value, now):
                say(f"buildbot-revert: {entry.revision[:12]}: {plan.why} (#{number})")
            return
        if not any(c.body.startswith(STAND_DOWN_MARKER) for c in comments):
            closing = plan.step is FollowStep.CLOSE
            await self.client.comment(number, stand_down_comment(plan.why, closing, touched))
        if plan.step is FollowStep.CLOSE:
            await self.client.close_pull(number)
        elif plan.step is FollowStep.MARK:
            await self.client.add_labels(number, [NO_LONGER_NEEDED])
        if await self.ledger.follow.set_outcome(entry.revision, Outcome.SUPERSEDED.value, now):
            say(
                f"buildbot-revert: {entry.revision[:12]}: stood down revert PR #{number} "
                f"({plan.step.value}): {plan.why}"
            )
            author = await self._culprit_author(entry)
            self.notify(
                Notice(
                    NoticeKind.STOOD_DOWN,
                    entry.revision,
                    entry.title or "",
                    author or "the change's author",
                    tuple(dict.fromkeys(q.builder for q in qualified)),
                    entry.revert_url,
                    plan.why,
                    author_login=author,
                )
            )

    async def _culprit_author(self, entry: Entry) -> str | None:
        """The culprit PR's author as GitHub knows them (None: unknown or unreachable)."""
        if entry.culprit_pr is None or self.client is None:
            return None
        try:
            return (await self.client.get_pull(entry.culprit_pr)).author or None
        except GitHubError:
            return None

    # -- relands ---------------------------------------------------------------------

    def relands(self, changes: Iterable[Change]) -> list[tuple[str, str]]:
        """(merged revision, reland revision) for each change that re-applies a merged revert's."""
        found = []
        for change in changes:
            for revision, title in self._merged:
                if change.revision != revision and outcomes.is_reland(change, title):
                    found.append((revision, change.revision))
        return found

    async def note_changes(self, changes: Iterable[Change]) -> None:
        """Link each reland from the row of the change it re-applies."""
        for revision, reland in self.relands(changes):
            now = self.clock.seconds()
            if await self.ledger.follow.set_outcome(
                revision, Outcome.RELANDED.value, now, unless=("merged",), reland=reland
            ):
                say(f"buildbot-revert: {revision[:12]} was relanded as {reland[:12]}")
            self._merged = [(r, t) for r, t in self._merged if r != revision]

    # -- human reverts (false negatives) ------------------------------------------

    def human_reverts(self, changes: Iterable[Change]) -> list[Change]:
        """The changes worded as a human's revert that the follow-up has not read yet."""
        return [
            c
            for c in changes
            if c.revision not in self._reverts_read and human_reverts.named(c) is not None
        ]

    async def note_human_reverts(self, changes: Iterable[Change]) -> None:
        """Record each human revert of a change the bot saw red and did not revert.

        A database error is a log line; the next build of the change reads it again.
        """
        for change in self.human_reverts(changes):
            try:
                await self._note_human_revert(change)
            except Exception as exc:
                say(f"buildbot-revert: {change.revision[:12]}: reading it as a revert: {exc}")
                continue
            self._reverts_read[change.revision] = None
            while len(self._reverts_read) > _READ_KEPT:
                del self._reverts_read[next(iter(self._reverts_read))]

    async def _note_human_revert(self, change: Change) -> None:
        """Ask the records what the revert names, the core whether it was missed; record it."""
        names = human_reverts.named(change)
        if names is None:
            return
        seen = list(await self.ledger.human.seen_red(names))
        if self.decisions is not None:
            seen += await self.decisions.seen_red(names)
        found = human_reverts.missed(change, seen)
        if found is None:
            return
        if await self.ledger.human.record(found, self.clock.seconds()):
            say(
                f"buildbot-revert: {found.revision[:12]} was reverted by a human "
                f"({found.revert[:12]}) and not by the bot ({found.how}): a false negative"
            )
