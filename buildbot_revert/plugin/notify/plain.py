"""A plain JSON webhook: the event's fields as data, for any receiver.

No markup, so nothing to escape but JSON itself; the JSON is written
HTML-safe (``<``, ``>``, ``&`` as ``\\u003c``...), so a receiver that drops a
field into a page cannot be handed a ``<script>``.  ``@`` is defused as
everywhere, for a receiver that forwards ``text`` to a chat.
"""

from __future__ import annotations

import json

from buildbot_revert.core.untrusted import defuse_at
from buildbot_revert.plugin.notify.notice import Notice, one_line, safe_url
from buildbot_revert.plugin.notify.render import Message


def render(notice: Notice, mention: str | None = None) -> Message:
    title = defuse_at(one_line(notice.title))
    body = {
        "event": notice.kind.value,
        "revision": notice.revision,
        "title": title,
        "author": defuse_at(one_line(notice.author)),
        "author_login": notice.author_login,
        "builders": [one_line(b) for b in notice.builders],
        "url": safe_url(notice.url),
        "why": defuse_at(one_line(notice.why)),
        "text": f"{notice.headline}: {notice.revision[:12]} {title}",
    }
    raw = json.dumps(body)
    raw = raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Message(raw.encode(), "application/json")
