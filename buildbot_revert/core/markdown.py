"""Safe Markdown for GitHub bodies built from untrusted text (the Markdown of :mod:`.untrusted`).

Commit titles, builder names and log lines come from people and programs we
do not control.  Put into a PR body or comment as-is they could format the
page, hide text in HTML, link to ``javascript:`` or to a bare URL, ping
arbitrary people (``@someone``, ``@org/team``) or close issues when the
revert is merged (``Fixes #123``).  Every piece of untrusted text goes
through one of:

* :func:`text` for inline prose: Markdown punctuation is backslash-escaped,
  ``& < >`` become entities, every ``@`` gets a zero-width space after it
  (:func:`.untrusted.defuse_at`: it renders the same and notifies no one,
  wherever the ``@`` stands, after a backtick or a letter too), closing
  keywords lose their power (:func:`.untrusted.defuse_closing`) and bare
  URLs are not linked (:func:`.untrusted.defuse_urls`); ``#123`` alone
  still auto-links;
* :func:`code` for inline code, :func:`code_block` for log excerpts: a
  fence longer than any backtick run in the text, so nothing breaks out
  (and no ``@`` or closing keyword is live there either);
* :func:`link` for URLs we built ourselves: http(s) only.

Each of them first drops control and bidirectional formatting characters
(:func:`.untrusted.strip_controls`), so that text can neither drive a
terminal nor display in another order than the one it is read in.

The one intended mention, the culprit's author, is made with :func:`mention`,
which accepts only a valid GitHub login.  Pure: no I/O.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from buildbot_revert.core import untrusted
from buildbot_revert.core.references import is_github_login

# Characters that start or end Markdown inline constructs.
_INLINE = re.compile(r"([\\`*_\[\]|~!])")
_LINE_START = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|[+=-]|\d+[.)])", re.M)


def text(value: str, *, multiline: bool = False) -> str:
    """Escape untrusted prose for a Markdown body (one line unless ``multiline``)."""
    value = untrusted.strip_controls(value.replace("\r\n", "\n").replace("\t", " "))
    if not multiline:
        value = " ".join(value.split("\n"))
    # Defused before the escapes, which could split what GitHub reads after
    # unescaping (``owner/re\_po#1``); the zero-width spaces escape to themselves.
    value = untrusted.defuse_urls(_inert(value))
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _INLINE.sub(r"\\\1", value)
    return _LINE_START.sub(_escape_line_start, value)


def _inert(value: str) -> str:
    """``value`` with no live mention and no closing keyword that names an issue."""
    return untrusted.defuse_closing(untrusted.defuse_at(value))


def _escape_line_start(match: re.Match[str]) -> str:
    indent, marker = match.groups()
    if marker[0].isdigit():  # "1." / "1)" would start an ordered list
        return f"{indent}{marker[:-1]}\\{marker[-1]}"
    return f"{indent}\\{marker}"


def mention(login: str) -> str:
    """``@login`` for the one person we mean to notify; the login must be valid."""
    if not is_github_login(login):
        raise ValueError(f"not a GitHub login: {login!r}")
    return "@" + login


def code(value: str) -> str:
    """Untrusted text as inline code (mentions and HTML are inert inside code)."""
    value = _inert(" ".join(untrusted.strip_controls(value).splitlines()))
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def code_block(value: str, language: str = "") -> str:
    """Untrusted lines (log excerpts) as a fenced block nothing can escape."""
    value = _inert(untrusted.strip_controls(value.replace("\r\n", "\n").replace("\t", "    ")))
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * max(3, longest + 1)
    language = re.sub(r"[^\w+-]", "", language)
    return f"{fence}{language}\n{value.rstrip(chr(10))}\n{fence}"


def link(label: str, url: str) -> str:
    """A Markdown link with an escaped label; only http(s) URLs are accepted."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"refusing to link to a non-http(s) URL: {url!r}")
    safe_url = re.sub(r"[\s()<>\"'`]", lambda m: f"%{ord(m.group()):02X}", url)
    return f"[{text(label)}]({safe_url})"
