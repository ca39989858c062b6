"""Asking GitHub who may stop a revert, for the core's rule of standing.

:class:`Standing` applies :mod:`buildbot_revert.core.standing` to a culprit's
pull request: it finds who objected (comment authors) and who set the
opt-out label (the issue's ``labeled`` events), asks GitHub each login's role
(the collaborator permission endpoint) unless the login is the culprit's
author, and logs one line naming each login whose "no" it ignores.

Roles are cached per login for :data:`ROLE_TTL` seconds, at most
:data:`MAX_CACHED` logins: a grace period ending for several revisions at
once asks once per person, and a role taken away stops counting within the
TTL.  A GitHub error while asking is not a "no standing": it propagates, the
filer retries later, and nothing is filed on a guess.  So is an answer that
names no role (``200 {}``, a proxy's HTML page): the client raises it as a
GitHub error, logged in one line by the filer; only a 404 is "no such user".

Comments are read by GitHub's ``created_at`` and ``updated_at`` (ISO 8601,
UTC), which the core's objection window compares with the warning and the
deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from buildbot_revert.core import standing
from buildbot_revert.core.grace import ObjectionWindow
from buildbot_revert.github import GitHubClient, IssueComment, PullRequest
from buildbot_revert.logline import say
from buildbot_revert.plugin.ports import Clock

# Seconds a login's role is believed without asking again.
ROLE_TTL = 600.0
# Logins whose role is remembered at most (the oldest is forgotten first).
MAX_CACHED = 1024


class Standing:
    """Who may object or opt out on the culprit's PR, as GitHub says; roles cached."""

    def __init__(self, client: GitHubClient, required: str, *, clock: Clock) -> None:
        self.client = client
        self.required = required
        self.clock = clock
        self._roles: dict[str, tuple[str | None, float]] = {}

    async def role(self, login: str) -> str | None:
        """``login``'s role on the repository, from the cache while it is fresh."""
        key = login.casefold()
        now = self.clock.seconds()
        cached = self._roles.get(key)
        if cached is not None and now - cached[1] < ROLE_TTL:
            return cached[0]
        role = await self.client.role(login)
        self._roles.pop(key, None)
        self._roles[key] = (role, now)
        while len(self._roles) > MAX_CACHED:
            del self._roles[next(iter(self._roles))]
        return role

    async def counts(self, login: str | None, pull: PullRequest) -> bool:
        """Whether a "no" from ``login`` on ``pull`` counts (the core's rule)."""
        role = None
        if login is not None and standing.needs_role(login, pull.author):
            role = await self.role(login)
        return standing.has_standing(login, pull.author, role, self.required)

    async def objected(
        self,
        revision: str,
        pull: PullRequest,
        comments: Iterable[IssueComment],
        words: Iterable[str],
        window: ObjectionWindow,
    ) -> bool:
        """Whether someone with standing objected within ``window``; other objectors are logged."""
        read = (
            standing.Comment(
                author=c.author or None,
                body=c.body,
                created_at=epoch_of(c.created_at),
                updated_at=epoch_of(c.updated_at),
            )
            for c in comments
        )
        for login in standing.objectors(read, words, window):
            if await self.counts(login, pull):
                return True
            self._ignored(revision, pull, login, "objection")
        return False

    async def opted_out(self, revision: str, pull: PullRequest, label: str | None) -> bool:
        """Whether ``pull`` carries the opt-out ``label``, set by someone with standing."""
        if label is None or label not in pull.labels:
            return False
        setter = standing.label_setter(await self.client.label_events(pull.number), label)
        if await self.counts(setter, pull):
            return True
        self._ignored(revision, pull, setter, f"opt-out label {label!r}")
        return False

    def _ignored(self, revision: str, pull: PullRequest, login: str | None, what: str) -> None:
        """The one log line for a "no" that does not count, naming who said it."""
        who = repr(login) if login is not None else "an unknown account"
        say(
            f"buildbot-revert: {revision[:12]}: ignored the {what} by {who} on #{pull.number}: "
            f"neither the change's author nor a user with {self.required!r} permission"
        )


def epoch_of(stamp: str) -> float | None:
    """Epoch seconds of one of GitHub's timestamps (``2024-05-01T12:00:00Z``); None if not one."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    # GitHub's are UTC and say so; one without a zone says nothing we can compare.
    return when.timestamp() if when.tzinfo is not None else None
