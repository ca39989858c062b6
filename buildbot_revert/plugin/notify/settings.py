"""The ``webhooks=`` option: which webhooks, in which format, for which events.

``webhooks=[{'format': 'discord', 'url': util.Secret('discord_hook')}, ...]``:
``format`` is ``discord``, ``slack``, ``zulip`` or ``json``; ``url`` a string
or a renderable (its secret part never reaches a message: see
:func:`public_part`), ``https`` unless its host is a loopback one
(:func:`webhook_url_problem`: a string at ``checkconfig``, a renderable once
the master rendered it; a Zulip URL's ``BOT_EMAIL:API_KEY@`` is kept); optional
``events`` (a subset of ``proposed``, ``filed``, ``stood-down``; all by
default), ``mentions`` (GitHub login -> the target's id for that person: the
one mention a notice may make, of the change's author), ``max_attempts`` (3),
``min_interval`` (seconds between two messages to this webhook, 1),
``timeout`` (10); for Zulip ``stream`` and ``topic``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from buildbot_revert.github.origin import Origin, OriginError, plain_http_problem
from buildbot_revert.plugin.notify.notice import NoticeKind

FORMATS = ("discord", "slack", "zulip", "json")
_KEYS = frozenset(
    {
        "format",
        "url",
        "events",
        "mentions",
        "max_attempts",
        "min_interval",
        "timeout",
        "stream",
        "topic",
    }
)


class WebhookError(ValueError):
    """A webhook setting that cannot work (shown to the user as is; never holds the URL)."""


@dataclass(frozen=True)
class WebhookSpec:
    format: str
    url: Any = field(repr=False)
    events: frozenset[NoticeKind] = frozenset(NoticeKind)
    mentions: Mapping[str, str] = field(default_factory=dict)
    max_attempts: int = 3
    min_interval: float = 1.0
    timeout: float = 10.0
    stream: str = ""
    topic: str = "buildbot-revert"

    @property
    def name(self) -> str:
        return self.format


def parse_webhooks(value: Any) -> tuple[WebhookSpec, ...]:
    """Validate ``webhooks=``; raise :class:`WebhookError` naming the first bad entry."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise WebhookError(
            "webhooks must be a list of dicts, e.g. [{'format': 'slack', 'url': ...}]"
        )
    return tuple(_one(i, entry) for i, entry in enumerate(value))


def _one(i: int, entry: Any) -> WebhookSpec:
    where = f"webhooks[{i}]"
    if not isinstance(entry, Mapping):
        raise WebhookError(f"{where} must be a dict with 'format' and 'url'")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise WebhookError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    fmt = entry.get("format")
    if fmt not in FORMATS:
        raise WebhookError(f"{where}: format must be one of {', '.join(FORMATS)}, not {fmt!r:.30}")
    url = entry.get("url")
    if url is None:
        raise WebhookError(f"{where}: url is missing")
    problem = webhook_url_problem(url) if isinstance(url, str) else None
    if problem is not None:
        raise WebhookError(f"{where}: url {problem}")
    events = entry.get("events", [k.value for k in NoticeKind])
    try:
        kinds = frozenset(NoticeKind(e) for e in events)
    except (TypeError, ValueError):
        raise WebhookError(
            f"{where}: events must be a list of {', '.join(k.value for k in NoticeKind)}"
        ) from None
    mentions = entry.get("mentions", {})
    if not isinstance(mentions, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mentions.items()
    ):
        raise WebhookError(f"{where}: mentions must map GitHub logins to the target's ids")
    attempts = entry.get("max_attempts", 3)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 10:
        raise WebhookError(f"{where}: max_attempts must be a whole number from 1 to 10")
    numbers = {}
    for key, default in (("min_interval", 1.0), ("timeout", 10.0)):
        number = entry.get(key, default)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
            raise WebhookError(f"{where}: {key} must be a number of seconds")
        numbers[key] = float(number)
    if fmt == "zulip" and not isinstance(entry.get("stream"), str):
        raise WebhookError(f"{where}: a zulip webhook needs a 'stream'")
    return WebhookSpec(
        format=fmt,
        url=url,
        events=kinds,
        mentions=dict(mentions),
        max_attempts=attempts,
        min_interval=numbers["min_interval"],
        timeout=numbers["timeout"] or 10.0,
        stream=str(entry.get("stream", "")),
        topic=str(entry.get("topic", "buildbot-revert")),
    )


def webhook_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook's, in one clause naming only its origin; None when it can.

    A webhook URL carries a secret (Discord's and Slack's path, Zulip's
    ``BOT_EMAIL:API_KEY@``), so it takes the API URL's rule: ``https``, plain
    ``http`` only to a loopback host.  The clause names the URL by scheme,
    host and port, never its path or userinfo.
    """
    try:
        origin = Origin.of(url.strip())
    except OriginError:
        return "must be an http(s) URL"
    problem = plain_http_problem(origin)
    return None if problem is None else f"{problem}, not {origin}"


def public_part(url: str) -> str:
    """What a message may say of a webhook URL: scheme, host and port, nothing secret."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<a webhook URL>"
    return f"{parts.scheme}://{host}{port}/\u2026"
