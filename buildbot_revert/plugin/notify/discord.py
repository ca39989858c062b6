"""Discord's webhook format: a JSON ``content`` in Discord's Markdown, mentions off.

Untrusted text is backslash-escaped for Discord's Markdown (``* _ ~ ` | >
# - [ ] ( )`` and the backslash itself) and every ``@`` and ``<`` gets a
zero-width space after it, so neither ``@everyone``/``@here`` nor
``<@id>``/``<@&id>``/``<#id>`` can form; ``allowed_mentions`` then allows
only the author's id, if mapped (Discord's documented switch, belt and
braces).
"""

from __future__ import annotations

import json
import re

from buildbot_revert.core.untrusted import defuse_at
from buildbot_revert.plugin.notify.notice import Notice, one_line, safe_url
from buildbot_revert.plugin.notify.render import Message

_MARKUP = re.compile(r"([\\*_~`|>#\-\[\]()])")
_ID = re.compile(r"\d{5,25}\Z")


def escape(value: str) -> str:
    """Untrusted text as literal Discord Markdown that pings no one."""
    text = _MARKUP.sub(r"\\\1", one_line(value))
    return defuse_at(text).replace("<", "<\u200b")


def render(notice: Notice, mention: str | None = None) -> Message:
    author = escape(notice.author)
    users: list[str] = []
    if mention is not None and _ID.match(mention):
        author, users = f"<@{mention}>", [mention]
    lines = [
        f"**{notice.headline}**: `{notice.revision[:12]}` {escape(notice.title)}",
        f"Author: {author}; builders: {', '.join(escape(b) for b in notice.builders) or '-'}",
    ]
    if notice.why:
        lines.append(escape(notice.why))
    url = safe_url(notice.url)
    if url:
        lines.append(f"<{url}>")
    body = {"content": "\n".join(lines)[:2000], "allowed_mentions": {"parse": [], "users": users}}
    return Message(json.dumps(body).encode(), "application/json")
