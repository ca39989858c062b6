"""The reporter's collaborators, made from its settings on every (re)configuration.

:class:`Wiring` is the factory the reporter (:mod:`.reporter`) asks for the
parts it hands each finished build to: the gatherer (kept across
reconfigurations, its caches forgotten), the ledger, memory, dashboard and
held-state tables (made once), the GitHub client (when the mode needs one
and the token renders), the webhooks, the filer, the follow-up and the
suspects' diffs (:mod:`.diffs`; read with the token in a dry run too, when
one is given).  It
owns the HTTP connection pool they share.

The GitHub token is rendered here, on every (re)configuration, and only when
the mode needs it (``comment`` or ``revert``): a dry run starts without one.
A token that cannot be rendered (say the secret is missing) is one line in
the log naming the secret, never a traceback and never the value; the
reporter then decides and logs as usual but does nothing on GitHub until a
later (re)configuration renders the token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from treq.client import HTTPClient
from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.github import GitHubClient
from buildbot_revert.logline import say
from buildbot_revert.plugin.config import (
    Mode,
    Settings,
    SettingsError,
    describe_token,
    rendered_token,
)
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.diffs import DiffSource
from buildbot_revert.plugin.filing import Filer
from buildbot_revert.plugin.follow_up import FollowUp
from buildbot_revert.plugin.gather import Gatherer
from buildbot_revert.plugin.held import HeldStore
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.memory import Memory
from buildbot_revert.plugin.notify import Notifier, Webhook
from buildbot_revert.plugin.notify.settings import public_part, webhook_url_problem
from buildbot_revert.plugin.ports import Clock, Master


@dataclass
class Parts:
    """What one configuration is wired from (the tables are made once and kept).

    The reporter's ``parts``: None until its first configuration.
    """

    gatherer: Gatherer
    ledger: Ledger
    memory: Memory
    decisions: Decisions
    held: HeldStore
    notifier: Notifier
    filer: Filer | None = None
    follow_up: FollowUp | None = None
    diffs: DiffSource | None = None


class Wiring:
    """Makes the reporter's parts (see the module); one per reporter."""

    def __init__(
        self,
        master: Master,
        reactor: Clock,
        render: Callable[[Any], defer.Deferred[Any]],
        owner: str,
        build_url: Callable[[str, int], str | None],
    ) -> None:
        self.master = master
        # The master's reactor: the parts' clock, and what the HTTP pool connects through.
        self.reactor = reactor
        # The service's renderSecrets: a Deferred of the rendered value (a
        # secret or renderable as configured, rendered to whatever it holds).
        self.render = render
        self.owner = owner
        self.build_url = build_url
        self.http_pool: HTTPConnectionPool | None = None

    async def wire(self, settings: Settings, previous: Parts | None) -> Parts:
        """The :class:`Parts` for ``settings``, with ``previous``'s tables."""
        if previous is None:
            run = self.master.db.pool.do
            gatherer = Gatherer(self.master, settings.log_lines)
            tables = (Ledger(run), Memory(run), Decisions(run), HeldStore(run, self.owner))
        else:
            gatherer = previous.gatherer
            gatherer.log_lines = settings.log_lines
            gatherer.forget_builders()
            tables = (previous.ledger, previous.memory, previous.decisions, previous.held)
        ledger, memory, decisions, held = tables
        client = await self._github(settings)
        notifier = await self.notifier(settings)
        parts = Parts(gatherer, ledger, memory, decisions, held, notifier)
        # Without a client a mode that acts on GitHub has no hands: verdicts
        # are still logged, nothing is filed or recorded.
        clock, name, notify = self.reactor, self.master_name(), notifier.notify
        if settings.mode is Mode.DRY_RUN or client is not None:
            parts.filer = Filer(
                settings,
                ledger,
                client,
                master_url=self.web_url(),
                clock=clock,
                master_name=name,
                build_url=self.build_url,
                notify=notify,
            )
        if client is not None:
            parts.follow_up = FollowUp(
                settings,
                ledger,
                client,
                decisions=decisions,
                clock=clock,
                master_name=name,
                build_url=self.build_url,
                notify=notify,
            )
        # The suspects' patches are read with the token even in a dry run; in
        # another mode without a usable token, its one line was written already.
        reads = client
        if client is None and settings.mode is Mode.DRY_RUN:
            reads = await self._reads(settings)
        parts.diffs = DiffSource(ledger, reads, self.reactor.seconds)
        return parts

    async def _reads(self, settings: Settings) -> GitHubClient | None:
        """A dry run's client for reading suspects' patches: only when a token is given."""
        if settings.token is None:
            return None
        token, _ = await self._token_or_problem(settings)
        if token is None:
            # A dry run needs no token: without one it says so without the
            # token's error line, and the file names decide.
            say(
                "buildbot-revert: a dry run without a usable GitHub token: the suspects' "
                "diffs are not read from GitHub (the file names decide)"
            )
            return None
        say(
            f"buildbot-revert: reading the diffs of suspect commits from GitHub with "
            f"{describe_token(settings.token)} (nothing else is done on GitHub in a dry run)"
        )
        return self._client(settings, token)

    async def _github(self, settings: Settings) -> GitHubClient | None:
        """The GitHub client the mode needs, or None (dry run, or no usable token)."""
        if settings.mode is Mode.DRY_RUN:
            say(
                f"buildbot-revert: {settings.repo}, mode 'dry-run': verdicts are logged and "
                "proposed reverts recorded in the master's database; nothing is done on GitHub"
            )
            return None
        token = await self.render_token(settings)
        if token is None:
            return None
        say(
            f"buildbot-revert: {settings.repo}, mode {settings.mode.value!r}: "
            f"acting on GitHub with {describe_token(settings.token)}"
        )
        return self._client(settings, token)

    def _client(self, settings: Settings, token: str) -> GitHubClient:
        """The GitHub client of ``settings``' repository, on the master's HTTP client."""
        clock = IReactorTime(self.reactor)
        return GitHubClient(self.http(), settings.api_url, settings.repo, token, clock=clock)

    async def render_token(self, settings: Settings) -> str | None:
        """The token as a string, or None after one line in the log saying why not.

        Neither the line nor anything else here ever holds the token's value.
        """
        token, problem = await self._token_or_problem(settings)
        if token is not None:
            return token
        what = describe_token(settings.token)
        needs = f"mode {settings.mode.value!r} needs it, so nothing is done on GitHub"
        say(
            f"buildbot-revert: {what} {problem}; {needs} until it is supplied and the "
            "master restarted"
        )
        return None

    async def _token_or_problem(self, settings: Settings) -> tuple[str | None, str | None]:
        """``(token, None)``, or ``(None, why it cannot be used)``: the why never holds it."""
        try:
            value = await self.render(settings.token)
        except Exception as exc:
            return None, f"could not be rendered: {one_line(exc)}"
        try:
            return rendered_token(value), None
        except SettingsError as exc:
            return None, f"is unusable: {exc}"

    def http(self) -> HTTPClient:
        """The master's HTTP client (treq on its reactor), shared by GitHub and the webhooks."""
        reactor = self.reactor
        if self.http_pool is None:
            # twisted.web.client has no annotations for HTTPConnectionPool and Agent.
            self.http_pool = HTTPConnectionPool(reactor, persistent=True)  # type: ignore[no-untyped-call]
        # Agent implements IAgent, which mypy cannot see without the zope plugin.
        agent = Agent(reactor, pool=self.http_pool)  # type: ignore[no-untyped-call]
        return HTTPClient(agent)  # type: ignore[arg-type]

    async def notifier(self, settings: Settings) -> Notifier:
        """The webhooks, their URLs rendered (a secret's value never reaches the log)."""
        hooks = []
        for spec in settings.webhooks:
            try:
                url = await self.render(spec.url)
            except Exception as exc:
                say(
                    f"buildbot-revert: a {spec.name} webhook URL could not be rendered "
                    f"({type(exc).__name__}); that webhook is off"
                )
                continue
            problem = webhook_url_problem(url) if isinstance(url, str) else "is not a string"
            if problem is not None:
                # Checked here too: a renderable's value is unknown at checkconfig.
                say(f"buildbot-revert: a {spec.name} webhook URL {problem}; it is off")
                continue
            hooks.append(Webhook(spec, url.strip(), self.http(), self.reactor))
            say(f"buildbot-revert: notifying a {spec.name} webhook at {public_part(url)}")
        return Notifier(hooks)

    def master_name(self) -> str:
        """The master's name, as the ledger's rows name who claimed them."""
        name = getattr(self.master, "name", None) or ""
        return str(name)[:255]

    def web_url(self) -> str | None:
        """The master's web address, if it has one."""
        url = getattr(getattr(self.master, "config", None), "buildbotURL", None)
        return url if isinstance(url, str) and url else None


def one_line(exc: BaseException) -> str:
    """An exception's message on one short line (a KeyError's without its quotes)."""
    # util.Interpolate renders its parts with gatherResults: the cause is inside.
    while isinstance(exc, defer.FirstError) and exc.subFailure.value is not None:
        exc = exc.subFailure.value
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        text = exc.args[0]
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:300]
