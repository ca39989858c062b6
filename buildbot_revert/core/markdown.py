"""Safe Markdown for GitHub bodies built from untrusted text.

Commit titles, builder names and log lines come from people and programs we
do not control.  Put into a PR body or comment as-is they could format the
page, hide text in HTML, link to ``javascript:``, ping arbitrary people
(``@someone``, ``@org/team``) or close issues when the revert is merged
(``Fixes #123``).  Every piece of untrusted text goes through one of:

* :func:`text` for inline prose: Markdown punctuation is backslash-escaped,
  ``& < >`` become entities, @-mentions get a zero-width space after the
  ``@`` (the trick GitHub bots use: it renders the same and notifies no one),
  and closing keywords lose their power; ``#123`` still auto-links;
* :func:`code` for inline code, :func:`code_block` for log excerpts: a
  fence longer than any backtick run in the text, so nothing breaks out;
* :func:`link` for URLs we built ourselves: http(s) only.

Each of them first applies :func:`strip_controls` (so does the HTML report):
control characters and bidirectional formatting characters are dropped, so
that text can neither drive a terminal nor display in another order than
the one it is read in.

The one intended mention, the culprit's author, is made with :func:`mention`,
which accepts only a valid GitHub login.  Pure: no I/O.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from buildbot_revert.core.references import is_github_login

_ZWSP = "&#8203;"
# Characters that start or end Markdown inline constructs.
_INLINE = re.compile(r"([\\`*_\[\]|~!])")
_MENTION = re.compile(r"(?<![\w`])@(?=[\w-])")
_CLOSING = re.compile(
    r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+)(?=[\w./-]*#\d|https?://)", re.I
)
_LINE_START = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|[+=-]|\d+[.)])", re.M)
# Control characters (C0 but tab and newline, DEL, C1) and the bidirectional
# formatting characters (the Arabic letter mark, LRM/RLM, the embeddings and
# overrides U+202A-U+202E, the isolates U+2066-U+2069): they can drive a
# terminal, or show text in another order than it is read ("Trojan Source").
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but \t and \n, DEL, C1
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidi marks, embeddings, isolates
)


def strip_controls(value: str) -> str:
    """Untrusted ``value`` without control or bidi formatting characters.

    Tabs and newlines stay (callers decide what a line is); ``\\r`` goes.
    The one filter for every report and PR body, Markdown or HTML.
    """
    return _CONTROL.sub("", value)


def text(value: str, *, multiline: bool = False) -> str:
    """Escape untrusted prose for a Markdown body (one line unless ``multiline``)."""
    value = strip_controls(value.replace("\r\n", "\n").replace("\t", " "))
    if not multiline:
        value = " ".join(value.split("\n"))
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _INLINE.sub(r"\\\1", value)
    value = _LINE_START.sub(_escape_line_start, value)
    value = _MENTION.sub("@" + _ZWSP, value)
    return _CLOSING.sub(lambda m: m.group(1) + _ZWSP + m.group(2), value)


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
    value = " ".join(strip_controls(value).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def code_block(value: str, language: str = "") -> str:
    """Untrusted lines (log excerpts) as a fenced block nothing can escape."""
    value = strip_controls(value.replace("\r\n", "\n").replace("\t", "    "))
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
