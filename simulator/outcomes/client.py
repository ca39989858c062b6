"""The GitHub client of ``simulate --github``: PyGithub, configured once, in this one module.

PyGithub earns its place because the command line blocks anyway: it is a
synchronous client whose ``GithubRetry`` (an urllib3 ``Retry``) already
knows GitHub's rate limits.  It is configured here so that:

* a primary rate limit (403 or 429 with ``x-ratelimit-remaining: 0``) is
  waited out until ``x-ratelimit-reset`` (PyGithub does this for a 403;
  :class:`_Retry` adds the same for a 429 without ``retry-after``);
* a secondary rate limit honours ``retry-after`` (urllib3 sleeps it), and
  without one waits GitHub's documented minute;
* an unreachable server is tried a few times, briefly, and then said so.

There is no retry loop of our own.  Nothing here ever formats the token:
errors are rebuilt as :class:`GitHubError` from the status and GitHub's
message, never from PyGithub's exception text or headers.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

import github
import requests
from github.GithubException import (
    BadCredentialsException,
    GithubException,
    RateLimitExceededException,
    UnknownObjectException,
)
from urllib3 import Retry

from buildbot_revert.core.untrusted import strip_controls
from simulator.outcomes.github_api import DEFAULT_API_URL, GitHubError, display_url
from simulator.outcomes.pulls import PullRecord

# Per request; GitHub's search may take several seconds.
TIMEOUT_S = 30
# A secondary limit without retry-after: GitHub says to wait at least a minute.
SECONDARY_WAIT_S = 60
# Search answers 100 per page at most.
PER_PAGE = 100

T = TypeVar("T")
# GithubRetry's words when it waits (a primary limit's reset, a retry-after).
_WAIT = re.compile(r"(?:Setting next backoff to |Retrying after )([0-9.]+)\s*s")


class _Retry(github.GithubRetry):
    """``GithubRetry``, which waits out a 403 primary limit, doing the same for a 429."""

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        if response is None or response.status != 429 or "Retry-After" in response.headers:
            return retry
        reset = response.headers.get("X-RateLimit-Reset") or ""
        if response.headers.get("X-RateLimit-Remaining") == "0" and reset.isdigit():
            # As GithubRetry for a 403: until the reset, plus a second for where in it.
            wait = max(int(reset) - time.time(), 0.0) + 1
            if wait > retry.get_backoff_time():
                retry.get_backoff_time = lambda: wait  # type: ignore[method-assign]
                # In GithubRetry's words, on its logger, so the notice below shows it too.
                logging.getLogger("github.GithubRetry").info(f"Setting next backoff to {wait:.0f}s")
        return retry


def make_retry() -> Retry:
    """The retry policy: rate limits waited out, 5xx a few times, no long connect loop."""
    return _Retry(
        secondary_rate_wait=SECONDARY_WAIT_S,
        total=None,
        # An unreachable server: three tries, a second apart, then one line.
        connect=2,
        read=2,
        # Each rate-limit wait spends one.
        status=8,
        backoff_factor=1.0,
        status_forcelist=[429, *range(500, 600)],
    )


class _RequestCounter(logging.Filter):
    """Counts PyGithub's requests (it logs each answered one at DEBUG) and drops the records."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.DEBUG and " ==> " in record.msg:
            self.count += 1
        return False


class _WaitNotice(logging.Handler):
    """Says on stderr when GithubRetry waits for a rate limit (else an hour looks like a hang)."""

    def emit(self, record: logging.LogRecord) -> None:
        m = _WAIT.match(record.getMessage())
        if m:
            seconds = float(m.group(1))
            print(f"simulate: GitHub rate limit: waiting {seconds:.1f} s", file=sys.stderr)


def _when(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


class GitHubClient:
    """The lookups the outcomes need, on one repository, each raising :class:`GitHubError`."""

    def __init__(self, repo: str, api_url: str = DEFAULT_API_URL, token: str | None = None) -> None:
        self.repo_name = repo
        self.api_url = display_url(api_url)
        auth = github.Auth.Token(token) if token else None
        self._gh = github.Github(
            base_url=api_url.rstrip("/"),
            auth=auth,
            retry=make_retry(),
            timeout=TIMEOUT_S,
            per_page=PER_PAGE,
            lazy=True,
        )
        # Lazy (the client is): no request until a lookup needs one.
        self._repo = self._gh.get_repo(repo)
        self._logger = logging.getLogger("github.Requester")
        self._counter = _RequestCounter()
        self._level = self._logger.level
        self._logger.addFilter(self._counter)
        self._logger.setLevel(logging.DEBUG)
        self._retry_logger = logging.getLogger("github.GithubRetry")
        self._retry_level = self._retry_logger.level
        self._notice = _WaitNotice(logging.INFO)
        self._retry_logger.addHandler(self._notice)
        self._retry_logger.setLevel(logging.INFO)
        # PyGithub hangs a console handler on its "github" logger: its words
        # (request lines, raw waits) would make stderr more than our one line.
        self._retry_propagate = self._retry_logger.propagate
        self._retry_logger.propagate = False

    @property
    def requests(self) -> int:
        """Requests GitHub answered so far (retries after a rate limit are not counted)."""
        return self._counter.count

    def close(self) -> None:
        self._logger.removeFilter(self._counter)
        self._logger.setLevel(self._level)
        self._retry_logger.removeHandler(self._notice)
        self._retry_logger.setLevel(self._retry_level)
        self._retry_logger.propagate = self._retry_propagate
        self._gh.close()

    # -- lookups ----------------------------------------------------------------

    def pull(self, number: int) -> PullRecord | None:
        """Pull request ``number``, or ``None`` when there is none."""
        return self._ask(lambda: _pull_record(self._repo.get_pull(number)), missing=None)

    def commit_pulls(self, sha: str) -> list[PullRecord]:
        """The pull requests that merged commit ``sha`` (none when GitHub knows no such commit)."""

        def ask() -> list[PullRecord]:
            return [_pull_record(p) for p in self._repo.get_commit(sha).get_pulls()]

        return self._ask(ask, missing=[])

    def commit_files(self, sha: str) -> list[list[str | None]] | None:
        """Commit ``sha``'s files as ``[filename, patch or None]`` (None: no such commit).

        GitHub's commit endpoint, as the plugin reads it: each file's
        ``patch`` is None for a binary file or one too large to show.
        """

        def ask() -> list[list[str | None]] | None:
            try:
                files = self._repo.get_commit(sha).files
                return [[str(f.filename), f.patch] for f in files]
            except GithubException as exc:
                if exc.status in (404, 422):  # no such repository, "No commit found for SHA"
                    return None
                raise

        return self._ask(ask, missing=None)

    def search_pulls(self, query: str) -> list[PullRecord]:
        """Pull requests of the repository matching a search ``query`` (``repo:`` is added)."""

        def ask() -> list[PullRecord]:
            found = self._gh.search_issues(f"repo:{self.repo_name} is:pr {query}")
            return [_issue_record(issue) for issue in found]

        return self._ask(ask, missing=[])

    def _ask(self, ask: Callable[[], T], missing: T) -> T:
        try:
            return ask()
        except UnknownObjectException:
            return missing
        except BadCredentialsException:
            raise GitHubError(
                f"GitHub at {self.api_url} refused the token (401 Bad credentials): check "
                "GITHUB_TOKEN or --github-token-file"
            ) from None
        except RateLimitExceededException as exc:
            raise GitHubError(
                f"GitHub at {self.api_url}: still rate limited after waiting "
                f"({exc.status}: {_message(exc)})"
            ) from None
        except GithubException as exc:
            raise GitHubError(
                f"GitHub at {self.api_url} answered {exc.status}: {_message(exc)}"
            ) from None
        except requests.exceptions.RequestException as exc:
            raise GitHubError(
                f"cannot reach GitHub at {self.api_url} ({type(exc).__name__})"
            ) from None


def _message(exc: GithubException) -> str:
    """GitHub's own message of an error answer, on one short line."""
    data = exc.data if isinstance(exc.data, dict) else {}
    text = str(data.get("message") or "no message")
    return " ".join(strip_controls(text).split())[:200]


def _labels(labels: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(label.name) for label in labels)


def _pull_record(pull: Any) -> PullRecord:
    return PullRecord(
        int(pull.number),
        pull.title or "",
        pull.body or "",
        pull.user.login if pull.user is not None else "",
        pull.state or "",
        pull.created_at.timestamp(),
        _when(pull.merged_at),
        _when(pull.closed_at),
        _labels(pull.labels),
    )


def _issue_record(issue: Any) -> PullRecord:
    pr = issue.pull_request
    return PullRecord(
        int(issue.number),
        issue.title or "",
        issue.body or "",
        issue.user.login if issue.user is not None else "",
        issue.state or "",
        issue.created_at.timestamp(),
        _when(pr.merged_at) if pr is not None else None,
        _when(issue.closed_at),
        _labels(issue.labels),
    )
