"""Text from the history made safe for the HTML report: the one escape it all goes through.

Every piece of text from the history (titles, authors, builder names) goes
through :func:`text`: control and bidirectional formatting characters
dropped (:func:`buildbot_revert.core.untrusted.for_page`), HTML-escaped,
and with every ``@`` defused (:func:`buildbot_revert.core.untrusted.defuse_at`)
so that text copied out of the page cannot ping anybody either.
"""

from __future__ import annotations

import html

from buildbot_revert.core.untrusted import defuse_at, for_page


def text(value: object) -> str:
    """Untrusted text, safe inside HTML elements and attributes."""
    return defuse_at(html.escape(for_page(str(value)), quote=True))


def short(name: str, limit: int = 36) -> str:
    """A name cut to ``limit`` characters (with an ellipsis), made safe."""
    return text(name if len(name) <= limit else name[: limit - 1] + "…")


def link(label: str, url: str | None) -> str:
    """Untrusted ``label``, linked when the history says where it lives."""
    if not url:
        return text(label)
    return f'<a href="{html.escape(url, quote=True)}">{text(label)}</a>'
