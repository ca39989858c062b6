"""``simulate --github owner/name``: its options checked, its token found, its lookups run.

The token comes from ``--github-token-file`` or else ``$GITHUB_TOKEN``; it is
handed to the client and never printed (an unreadable file is named, never
its content).  Without one, public repositories still answer, within
GitHub's much lower unauthenticated limit: one line on stderr says so.
Every failure (a bad repository name or URL, an unreachable server, a
refused token) is one line and exit status 2, from :class:`CLIError`.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import click

from simulator.analysis.confirm import Confirmation, confirm
from simulator.analysis.replay import ReplayResult
from simulator.cli_errors import CLIError, warn
from simulator.history.store import HistoryError, HistoryStore
from simulator.outcomes.answers import Answers
from simulator.outcomes.client import DEFAULT_API_URL, GitHubClient, GitHubError, display_url
from simulator.outcomes.outcomes import GitHubOutcomes, github_outcomes

TOKEN_ENV = "GITHUB_TOKEN"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class GitHubOptions:
    repo: str
    api_url: str
    token_file: Path | None
    refresh: bool


def check_options(
    repo: str | None,
    api_url: str | None,
    token_file: Path | None,
    refresh: bool,
    sweeping: bool,
) -> GitHubOptions | None:
    """The ``--github`` options, checked before the replay; ``None`` without ``--github``."""
    if repo is None:
        given = [
            flag
            for flag, value in (
                ("--github-url", api_url),
                ("--github-token-file", token_file),
                ("--github-refresh", refresh or None),
            )
            if value is not None
        ]
        if given:
            raise CLIError(f"{', '.join(given)} given without --github owner/name")
        return None
    if sweeping:
        raise CLIError("--github and --sweep: outcomes on GitHub are for a single backtest")
    if not _REPO.match(repo):
        raise CLIError(f"--github: {repo!r} is not a repository (use owner/name)")
    url = api_url or DEFAULT_API_URL
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CLIError(f"--github-url: {display_url(url)!r} is not an http(s) address")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        # The token (a file's or $GITHUB_TOKEN) would cross the network readable.
        raise CLIError(
            f"--github-url: {display_url(url)!r} must be https "
            "(plain http only for a loopback host such as 127.0.0.1)"
        )
    if token_file is not None:
        read_token_file(token_file)  # now, not after the replay
    return GitHubOptions(repo, url, token_file, refresh)


def _loopback(host: str) -> bool:
    """Whether ``host`` is this machine (as the plugin's ``api_url`` rule says)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token_file(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not text"
        raise CLIError(f"--github-token-file {path}: cannot read it ({reason})") from None
    if not token or any(ch.isspace() for ch in token):
        raise CLIError(f"--github-token-file {path}: does not hold one token")
    return token


def find_token(options: GitHubOptions) -> str | None:
    if options.token_file is not None:
        return read_token_file(options.token_file)
    return os.environ.get(TOKEN_ENV) or None


def lookup_outcomes(
    options: GitHubOptions,
    store: HistoryStore,
    result: ReplayResult,
    confirmation: Confirmation | None,
) -> GitHubOutcomes:
    """What people did on GitHub about the replay's proposals (cached in ``store``)."""

    def connect() -> GitHubClient:
        token = find_token(options)
        if token is None:
            warn(
                f"no GitHub token (${TOKEN_ENV} or --github-token-file): asking unauthenticated, "
                "which only public repositories answer, 60 requests an hour"
            )
        return GitHubClient(options.repo, options.api_url, token)

    if store.get_meta("source") == "generated":
        warn(
            "--github: this history is generated, its changes are not on GitHub: expect "
            "no outcomes (use it on a history pulled from a real master)"
        )
    if confirmation is None:
        proposers = sorted({b for p in result.proposals() for b in p.builders})
        builds = store.iter_builds(result.selection.since, result.selection.until, proposers)
        confirmation = confirm(result, store.changes_by_id().values(), builds)
    try:
        answers = Answers(
            store, options.repo, display_url(options.api_url), connect, options.refresh
        )
    except HistoryError as exc:
        raise CLIError(str(exc)) from None
    try:
        outcomes = github_outcomes(answers, result, store.changes_by_id().values(), confirmation)
    except (GitHubError, HistoryError) as exc:
        raise CLIError(str(exc)) from None
    finally:
        answers.close()
    click.echo(
        f"simulate: GitHub {options.repo}: {outcomes.requests} requests, "
        f"{outcomes.cached} answers from the history file's cache",
        err=True,
    )
    return outcomes
