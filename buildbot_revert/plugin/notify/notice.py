"""What a notification is about: one event of one proposed revert, as plain data."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

from buildbot_revert.core.untrusted import strip_controls


class NoticeKind(StrEnum):
    """The events announced."""

    PROPOSED = "proposed"  # dry-run or comment mode: a revert was decided, none filed
    FILED = "filed"  # a revert PR was opened
    STOOD_DOWN = "stood-down"  # a revert PR is no longer needed


class Notice(NamedTuple):
    """One event; every text field but ``url`` is untrusted."""

    kind: NoticeKind
    revision: str
    title: str
    # The change's author: their GitHub login when known, else the commit's name.
    author: str
    builders: tuple[str, ...]
    # The revert PR's page (filed, stood down) or the culprit PR's (proposed).
    url: str | None
    why: str = ""
    # The author's GitHub login, when GitHub told us (the key of a webhook's mentions).
    author_login: str | None = None

    @property
    def headline(self) -> str:
        """The event in words, without any untrusted text."""
        return {
            NoticeKind.PROPOSED: "Revert proposed (not filed)",
            NoticeKind.FILED: "Revert pull request filed",
            NoticeKind.STOOD_DOWN: "Revert pull request stood down",
        }[self.kind]


def one_line(value: str, limit: int = 300) -> str:
    """Untrusted text on one line, without control or bidi characters, at most ``limit``."""
    text = " ".join(strip_controls(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def safe_url(url: str | None) -> str | None:
    """``url`` if it is a plain http(s) URL with nothing a markup could break on, else None."""
    if url is None or not re.fullmatch(r"https?://[^\s<>()\[\]|`\"'*_~]+", url):
        return None
    return url
