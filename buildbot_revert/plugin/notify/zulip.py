"""Zulip's send-message API: a form-encoded stream message in Zulip's Markdown.

The webhook URL is ``https://BOT_EMAIL:API_KEY@zulip.example.org/api/v1/messages``
(the sender turns the credentials into HTTP basic authentication, as Zulip's
API asks); ``stream`` and ``topic`` say where.  Untrusted text is
backslash-escaped for Zulip's Markdown (``* _ ~ ` | > # - [ ] ( ) $ < :``) and a
zero-width space follows every ``@``, so no mention forms (``@**all**``,
``@**everyone**``, ``@**stream**``, ``@*group*``, ``@_**silent**``).  The one
mention allowed is the author's, as ``@**Full Name|id**``, when the webhook maps
their login to a Zulip user id.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from buildbot_revert.core.untrusted import defuse_at
from buildbot_revert.plugin.notify.notice import Notice, one_line, safe_url
from buildbot_revert.plugin.notify.render import Message

_MARKUP = re.compile(r"([\\*_~`|>#\-\[\]()$<:!])")
_ID = re.compile(r"\d{1,12}\Z")


def escape(value: str) -> str:
    """Untrusted text as literal Zulip Markdown that pings no one."""
    return defuse_at(_MARKUP.sub(r"\\\1", one_line(value)))


def render(
    notice: Notice, mention: str | None = None, *, stream: str = "", topic: str = ""
) -> Message:
    author = escape(notice.author)
    if mention is not None and _ID.match(mention):
        name = defuse_at(one_line(notice.author, 60).replace("*", "").replace("|", ""))
        author = f"@**{name}|{mention}**"
    builders = ", ".join(escape(b) for b in notice.builders) or "-"
    lines = [
        f"**{notice.headline}**: `{notice.revision[:12]}` {escape(notice.title)}",
        f"Author: {author}; builders: {builders}",
    ]
    if notice.why:
        lines.append(escape(notice.why))
    url = safe_url(notice.url)
    if url:
        lines.append(url)
    form = {
        "type": "stream",
        "to": stream,
        "topic": one_line(topic or "buildbot-revert", 60),
        "content": "\n".join(lines),
    }
    return Message(urlencode(form).encode(), "application/x-www-form-urlencoded")
