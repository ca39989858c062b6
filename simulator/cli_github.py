"""``simulate --github owner/name``: its options checked, its token found, its lookups run.

With ``--github-diffs`` the same client also reads each suspect's diff from
GitHub's commit endpoint when a decision asks for it (:class:`GitHubDiffs`),
as the plugin does, its answers cached in the history file beside the
outcomes' (a rerun asks nothing); a commit GitHub cannot give is one
warning and no diff, the file names then deciding, as in the plugin.

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
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from buildbot_revert.core.diffs import Diff, from_patches
from buildbot_revert.core.model import Change
from simulator.analysis.confirm import Confirmation, confirm
from simulator.analysis.replay import ReplayResult
from simulator.cli_errors import CLIError, warn
from simulator.history.schema import HistoryError
from simulator.history.store import HistoryStore
from simulator.outcomes.answers import Answers
from simulator.outcomes.github_api import DEFAULT_API_URL, GitHubError, display_url
from simulator.outcomes.outcomes import GitHubOutcomes, github_outcomes

if TYPE_CHECKING:
    from simulator.outcomes.client import GitHubClient

TOKEN_ENV = "GITHUB_TOKEN"
# What installs PyGithub and requests beside the simulator (a backtest alone needs neither).
GITHUB_EXTRA = "buildbot-revert[github]"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# A commit id: what goes into the commit endpoint's URL (a history's text may not).
_SHA = re.compile(r"^[0-9a-fA-F]{4,64}$")


@dataclass(frozen=True)
class GitHubOptions:
    repo: str
    api_url: str
    token_file: Path | None
    refresh: bool
    # --github-diffs: the suspects' diffs read from GitHub's commit endpoint.
    diffs: bool = False


def check_options(
    repo: str | None,
    api_url: str | None,
    token_file: Path | None,
    refresh: bool,
    sweeping: bool,
    diffs: bool = False,
) -> GitHubOptions | None:
    """The ``--github`` options, checked before the replay; ``None`` without ``--github``."""
    if repo is None:
        given = [
            flag
            for flag, value in (
                ("--github-url", api_url),
                ("--github-token-file", token_file),
                ("--github-refresh", refresh or None),
                ("--github-diffs", diffs or None),
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
    if find_spec("github") is None or find_spec("requests") is None:
        raise CLIError(f"--github needs PyGithub: pip install '{GITHUB_EXTRA}'")
    return GitHubOptions(repo, url, token_file, refresh, diffs)


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


def _connect(options: GitHubOptions) -> Callable[[], GitHubClient]:
    """Makes the client when a question is first not cached (warning once without a token)."""

    def connect() -> GitHubClient:
        # Imported here: PyGithub and requests load only when GitHub is asked.
        from simulator.outcomes.client import GitHubClient

        token = find_token(options)
        if token is None:
            warn(
                f"no GitHub token (${TOKEN_ENV} or --github-token-file): asking unauthenticated, "
                "which only public repositories answer, 60 requests an hour"
            )
        return GitHubClient(options.repo, options.api_url, token)

    return connect


def open_answers(options: GitHubOptions, store: HistoryStore) -> Answers:
    """GitHub's answers through the history file's cache (an unwritable file: one line)."""
    try:
        return Answers(
            store, options.repo, display_url(options.api_url), _connect(options), options.refresh
        )
    except HistoryError as exc:
        raise CLIError(str(exc)) from None


def github_diffs(options: GitHubOptions | None, store: HistoryStore) -> GitHubDiffs | None:
    """The diff reader of ``--github-diffs`` (None without it)."""
    if options is None or not options.diffs:
        return None
    return GitHubDiffs(open_answers(options, store))


class GitHubDiffs:
    """``--github-diffs``: a suspect's diff from GitHub's commit endpoint, through the cache."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self._read: dict[str, Diff | None] = {}

    def __call__(self, change: Change) -> Diff | None:
        """The diff of ``change``, read once; None when GitHub cannot give it."""
        revision = change.revision
        if revision in self._read:
            return self._read[revision]
        diff = None
        if _SHA.match(revision):
            try:
                files = self.answers.commit_files(revision)
            except GitHubError as exc:
                # As the plugin: said once, and the decision goes on without it.
                warn(f"could not read the diff of {revision[:12]} from GitHub ({exc}); "
                     "deciding without it")  # fmt: skip
                files = None
            except HistoryError as exc:
                raise CLIError(str(exc)) from None
            diff = None if files is None else from_patches(revision, files)
        self._read[revision] = diff
        return diff

    def close(self) -> None:
        """Say what GitHub was asked, and let the client go."""
        answers = self.answers
        answers.close()
        click.echo(
            f"simulate: GitHub {answers.repo}: the diffs of {len(self._read)} suspect(s), "
            f"{answers.requests} requests, {answers.cached} answers from the history file's cache",
            err=True,
        )


def lookup_outcomes(
    options: GitHubOptions,
    store: HistoryStore,
    result: ReplayResult,
    confirmation: Confirmation | None,
) -> GitHubOutcomes:
    """What people did on GitHub about the replay's proposals (cached in ``store``)."""
    if store.get_meta("source") == "generated":
        warn(
            "--github: this history is generated, its changes are not on GitHub: expect "
            "no outcomes (use it on a history pulled from a real master)"
        )
    if confirmation is None:
        proposers = sorted({b for p in result.proposals() for b in p.builders})
        builds = store.iter_builds(result.selection.since, result.selection.until, proposers)
        confirmation = confirm(result, store.changes_by_id().values(), builds)
    answers = open_answers(options, store)
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
