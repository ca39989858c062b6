"""Slack's incoming-webhook format: a JSON ``text`` in Slack's mrkdwn.

Slack's documented escaping is ``&`` ``<`` ``>`` to entities: after it no
``<!channel>``, ``<!here>``, ``<@U123>`` or ``<url|label>`` can form from
untrusted text.  Slack has no escape for ``* _ ~ `````, so a zero-width space
follows each; one follows every ``@`` too (``@channel`` typed as text).  The
one mention allowed is the author's, as ``<@ID>``, when the webhook maps
their login to a Slack member id.
"""

from __future__ import annotations

import json
import re

from buildbot_revert.core.untrusted import defuse_at
from buildbot_revert.plugin.notify.notice import Notice, one_line, safe_url
from buildbot_revert.plugin.notify.render import Message

_FORMATTING = re.compile(r"([*_~`])")
_ID = re.compile(r"[UW][A-Z0-9]{2,20}\Z")


def escape(value: str) -> str:
    """Untrusted text as literal mrkdwn that pings no one."""
    text = one_line(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return defuse_at(_FORMATTING.sub("\\1\u200b", text))


def render(notice: Notice, mention: str | None = None) -> Message:
    author = escape(notice.author)
    if mention is not None and _ID.match(mention):
        author = f"<@{mention}>"
    builders = ", ".join(escape(b) for b in notice.builders) or "-"
    url = safe_url(notice.url)
    head = f"*{notice.headline}*: `{notice.revision[:12]}` {escape(notice.title)}"
    if url:
        head = f"*<{url}|{notice.headline}>*: `{notice.revision[:12]}` {escape(notice.title)}"
    lines = [head, f"Author: {author}; builders: {builders}"]
    if notice.why:
        lines.append(escape(notice.why))
    body = {"text": "\n".join(lines), "unfurl_links": False}
    return Message(json.dumps(body).encode(), "application/json")
