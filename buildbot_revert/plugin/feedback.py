"""Reading false-positive feedback on the revert PRs this master filed (issue 32).

For each revert PR this master filed in the last :data:`WINDOW` seconds that
nobody has reported wrong yet, the periodic check (called from
:meth:`.follow_up.FollowUp.check`) reads its comments and labels on GitHub;
the core says which comments are reports (:mod:`buildbot_revert.core.feedback`),
and the rule of standing (:class:`.permissions.Standing`, as for objections:
``objection_permission``, ``write`` by default) which reporters count.  The
first report that counts is written to the ledger (:mod:`.ledger_wrong`): who,
when, how; a report by someone without standing is logged and ignored.

Reading costs two requests per revert PR (three with the label), so the
revert PRs are read at most once every ``every`` seconds (ten follow-up
intervals: ten minutes by default), not at every check: twenty revert PRs
in the window cost some 240 requests an hour of the token's 5,000.
"""

from __future__ import annotations

from buildbot_revert.core import feedback, standing
from buildbot_revert.github import GitHubClient, GitHubError, PullRequest
from buildbot_revert.logline import say
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import Entry
from buildbot_revert.plugin.ledger_wrong import WrongReport
from buildbot_revert.plugin.permissions import Standing
from buildbot_revert.plugin.ports import Clock

# How long after filing a revert PR is read for reports: the dashboard's 30
# days, and a little more (a report can come long after the merge).
WINDOW = 40 * 86400.0
# Reports are read once every this many follow-up intervals.
INTERVALS = 10


class Feedback:
    """Finds and records reports of wrong reverts on one repository's revert PRs."""

    def __init__(
        self,
        ledger: Ledger,
        client: GitHubClient,
        required: str,
        *,
        clock: Clock,
        master_name: str,
        every: float,
    ) -> None:
        self.ledger = ledger
        self.client = client
        self.clock = clock
        self.master_name = master_name
        self.standing = Standing(client, required, clock=clock)
        self.every = every
        self._last: float | None = None

    async def check(self) -> None:
        """Read each revert PR due a look, if ``every`` seconds passed since the last read.

        A GitHub error is logged; the next read tries again.
        """
        now = self.clock.seconds()
        if self._last is not None and now - self._last < self.every:
            return
        self._last = now
        due: list[Entry] = await self.ledger.wrong.feedback_due(
            self.master_name, self.clock.seconds() - WINDOW
        )
        for entry in due:
            try:
                await self.read(entry)
            except GitHubError as exc:
                say(f"buildbot-revert: {entry.revision[:12]}: reading reports: {exc}")

    async def read(self, entry: Entry) -> WrongReport | None:
        """Record the first report on the entry's revert PR that counts; the report, or None."""
        assert entry.revert_pr is not None
        pull = await self.client.get_pull(entry.revert_pr)
        comments = await self.client.comments(entry.revert_pr)
        candidates = [
            (login, "comment")
            for login in feedback.reporters((c.author or None, c.body) for c in comments)
        ]
        if feedback.WRONG_LABEL in pull.labels:
            events = await self.client.label_events(pull.number)
            candidates.append((standing.label_setter(events, feedback.WRONG_LABEL), "label"))
        for login, how in candidates:
            if login is not None and await self._counts(login, pull):
                report = WrongReport(entry.revision, pull.number, login, how, self.clock.seconds())
                if await self.ledger.wrong.record(report):
                    say(
                        f"buildbot-revert: {entry.revision[:12]}: revert PR #{pull.number} "
                        f"reported wrong by {login!r} ({how}): counted as a false positive"
                    )
                return report
            self._ignored(entry, pull, login, how)
        return None

    async def _counts(self, login: str, pull: PullRequest) -> bool:
        """Whether ``login`` may report the revert wrong: a role of at least the required one.

        The revert PR's author is the bot; the culprit's author has no say
        of their own here (it is their change being judged), only their role.
        """
        role = await self.standing.role(login)
        return standing.has_standing(login, None, role, self.standing.required)

    def _ignored(self, entry: Entry, pull: PullRequest, login: str | None, how: str) -> None:
        """The one log line for a report that does not count, naming who made it."""
        who = repr(login) if login is not None else "an unknown account"
        say(
            f"buildbot-revert: {entry.revision[:12]}: ignored the report of a wrong revert "
            f"({how}) by {who} on #{pull.number}: not a user with "
            f"{self.standing.required!r} permission"
        )
