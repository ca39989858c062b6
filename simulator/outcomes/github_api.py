"""What ``simulate --github`` says of GitHub without loading its client.

The default API address, the error every lookup raises, and an address fit
for messages.  They live apart from :mod:`.client` so that a command that
never asks GitHub (the default backtest) does not import PyGithub and
requests, which are a third of a backtest's memory.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

DEFAULT_API_URL = "https://api.github.com"


class GitHubError(Exception):
    """GitHub cannot answer: one line for the user, never holding the token."""


def display_url(url: str) -> str:
    """``url`` without any user or password in it, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
