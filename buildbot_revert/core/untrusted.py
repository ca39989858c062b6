"""The one sanitiser of untrusted text: what each output lets through of it.

Commit titles, authors, builder names, log lines and test names come from
people and programs we do not control.  Every output they reach has its own
dangers, and its one function here (or, for Markdown, in :mod:`.markdown`,
which builds Markdown constructs and applies these rules to everything
untrusted in them):

* **GitHub Markdown** (revert PR bodies, comments, the simulator's Markdown
  report): :func:`buildbot_revert.core.markdown.text` and its siblings, with
  :func:`defuse_at` (no one is pinged), :func:`defuse_closing` (merging the
  revert closes no issue), :func:`defuse_urls` (no bare URL becomes a link)
  and :func:`strip_controls`;
* **a commit message or pull request title** (the revert's, which GitHub
  shows as plain text and a squash merge writes into git):
  :func:`for_commit`;
* **a terminal** (``simulate``'s text report, the plugin's log lines):
  :func:`for_terminal`, which shows every control character as an escape
  (``\\x1b``) instead of letting it drive the terminal;
* **HTML and JSON** (the dashboard, its ``index.json``, the simulator's HTML
  and JSON reports): :func:`for_page`; the template engine or the JSON
  encoder escapes the rest;
* **GitHub's lengths** (a title of 256 characters, a body or comment of
  65,536): :func:`cut`, which says in the text how much it left out.

Defusing inserts a zero-width space (U+200B): the text reads the same and
GitHub's parsers no longer see a mention, a closing keyword or a link.
Pure: no I/O.
"""

from __future__ import annotations

import re

# GitHub refuses a pull request or issue title longer than this ("title is
# too long (maximum is 256 characters)"), and a body or comment longer than
# BODY_LIMIT ("body is too long (maximum is 65536 characters)"); 422 either way.
TITLE_LIMIT = 256
BODY_LIMIT = 65_536

ZWSP = "\u200b"
# Every ``@`` before something visible: ``@user``, ``@org/team``, and also
# `` `@user``, ``Café@user`` or ``a@b.c``, since GitHub's own idea of where a
# mention may start is wider than a word boundary.  An ``@`` already followed
# by a zero-width space is defused.
_AT = re.compile(r"@(?=[^\s\u200b])")
# What GitHub takes as the issue a closing keyword closes: ``#12``,
# ``owner/repo#12``, ``GH-12`` or a URL.  Case-insensitive, with a colon,
# spaces or Markdown punctuation in between (GitHub may read the text once
# rendered), and wherever the keyword starts (GitHub's word boundary is
# ASCII: ``修复fixes #12`` may count).
_BETWEEN = r"[\s:*_~`'\"(\[]*"
_CLOSING = re.compile(
    r"(close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
    rf"(?={_BETWEEN}(?:(?:[\w.-]+/[\w.-]+)?(?:#\d|gh-\d)|https?://))",
    re.IGNORECASE,
)
# The starts of the bare URLs GitHub's Markdown autolinks (``http://``,
# ``https://``, ``ftp://``: any ``://``) and of its ``www.`` links.
_URL = re.compile(r"(?<=:)(?=//)|(?<![\w.-])www(?=\.)", re.IGNORECASE)
# Control characters (C0 but tab and newline, DEL, C1) and the bidirectional
# formatting characters (the Arabic letter mark, LRM/RLM, the embeddings and
# overrides U+202A-U+202E, the isolates U+2066-U+2069): they can drive a
# terminal, or show text in another order than it is read ("Trojan Source").
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but \t and \n, DEL, C1
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidi marks, embeddings, isolates
)
# What a terminal must not receive: every C0 (tab and newline too), DEL, C1,
# the bidi characters, the line and paragraph separators, and lone
# surrogates (which cannot even be written out as UTF-8).
_TERMINAL = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    r"\u2028\u2029\ud800-\udfff]"
)


def strip_controls(value: str) -> str:
    """``value`` without control or bidi formatting characters; tabs and newlines stay."""
    return _CONTROL.sub("", value)


def defuse_at(value: str) -> str:
    """A zero-width space after every ``@``: it reads the same and pings no one."""
    return _AT.sub("@" + ZWSP, value)


def defuse_closing(value: str) -> str:
    """A zero-width space after every closing keyword that names an issue (``Fixes #12``)."""
    return _CLOSING.sub(lambda m: m.group(1) + ZWSP, value)


def defuse_urls(value: str) -> str:
    """A zero-width space inside every ``://`` and ``www.``: the URL reads the same, unlinked."""
    return _URL.sub(lambda m: m.group() + ZWSP, value)


def for_commit(value: str) -> str:
    """Untrusted text for a commit message or a pull request title (plain text on GitHub).

    No control or bidi character, no mention, no closing keyword that names
    an issue: merged, the revert pings no one and closes nothing.
    """
    return defuse_closing(defuse_at(strip_controls(value)))


def for_terminal(value: str, *, multiline: bool = False) -> str:
    """Untrusted text for a terminal: every control, bidi or separator character shown escaped.

    ``\\x1b`` arrives as the four characters ``\\x1b``, so nothing can set
    the title, write the clipboard or move the cursor.  Newlines stay when
    ``multiline``; tabs never do.
    """

    def shown(match: re.Match[str]) -> str:
        char = match.group()
        if multiline and char == "\n":
            return char
        return ascii(char)[1:-1]

    return _TERMINAL.sub(shown, value)


def for_page(value: str) -> str:
    """Untrusted text for HTML or JSON (their escaping is the template's or the encoder's).

    Without control or bidi characters: a page or a JSON reader shows the
    text in the order it is read.
    """
    return strip_controls(value)


def cut(value: str, limit: int) -> str:
    """``value`` if it has at most ``limit`` characters, else its start and what was cut.

    The result, note included (``… (cut: 68,000 characters)``), has at most
    ``limit`` characters, as long as ``limit`` leaves room for the note.
    """
    if len(value) <= limit:
        return value
    room = limit - len(f"\u2026 (cut: {len(value):,} characters)")
    if room < 0:
        return value[:limit]
    return f"{value[:room]}\u2026 (cut: {len(value) - room:,} characters)"
