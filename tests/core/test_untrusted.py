"""The one sanitiser of untrusted text, and the GitHub texts built with it.

The properties hold for any text, with Hypothesis biased toward what an
attacker writes into a commit title: ``@``, backticks, non-ASCII letters,
``#`` and ``GH-`` references, closing keywords, ``://``, control and bidi
characters.  Each matcher is written from GitHub's documented rule, not from
the sanitiser's: a mention is an ``@`` that no ASCII letter, digit or
underscore precedes (a backtick or a non-ASCII letter does not protect it),
then a login (and optionally ``/team``); a closing keyword is one of
``close(s|d)``, ``fix(es|ed)``, ``resolve(s|d)``, then an optional colon and
whitespace, then ``#N``, ``owner/repo#N``, ``GH-N`` or an issue URL.
"""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core import follow_up_text, markdown, pr_text, references, untrusted
from buildbot_revert.core.pr_text import BuildLink, RevertContext

# GitHub's mention: not after an ASCII word character, a login of at most
# 39 letters, digits and single hyphens, optionally a team.
MENTION = re.compile(
    r"(?<![A-Za-z0-9_])@[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}(?:/[A-Za-z0-9][A-Za-z0-9_-]*)?"
)
# GitHub's closing keyword followed by the reference of an issue.
CLOSING = re.compile(
    r"(?<![A-Za-z0-9_])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s*"
    r"(?:(?:[\w.-]+/[\w.-]+)?#\d|gh-\d|https?://)",
    re.IGNORECASE,
)
# What a terminal must not receive: C0 (newlines aside, where lines are
# meant), DEL, C1, and the bidirectional formatting characters.
TERMINAL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
BIDI_AND_CONTROLS = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)

PIECES = (
    "@", "`", "#", "://", "www.", "é", "Café", "修复", "ß", "_", "-", "/", "\\", "*", "[", "]",
    "(", ")", "<", ">", "&", "&#64;", ":", " ", "\n", "\r\n", "\t", "1", "12", "a", "user",
    "python/core-team", "o/r#", "GH-", "gh-", "https", "http", "ftp", "fixes", "Closes",
    "RESOLVED", "fix", "close", "\x1b", "\x1b]52;c;", "\x07", "\x9b", "\x00", "\x7f", "\u202e",
    "\u2066", "\u200f", "\u061c", "\u200b", "\u2028", "\ud800",
    # Whole attacks, so that each property meets them often.
    "`@user", "Café@user", "修复@python/core-team", "fixes #1", "Closes: o/r#2", "resolved GH-3",
    "Fix https://github.com/o/r/issues/4", "https://evil.example", "www.evil.example",
)  # fmt: skip
HOSTILE = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=40).map("".join)


def rendered(text: str) -> str:
    """What GitHub shows of our Markdown, near enough: code spans verbatim; elsewhere
    backslash escapes undone and entities decoded."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif text[i] == "`":
            run = re.match(r"`+", text[i:]).group()
            close = re.compile(rf"(?<!`){run}(?!`)").search(text, i + len(run))
            if close is None:
                out.append(run)
                i += len(run)
            else:
                out.append(text[i + len(run) : close.start()])
                i = close.end()
        else:
            end = min(
                (j for j in (text.find("\\", i), text.find("`", i)) if j >= 0), default=len(text)
            )
            out.append(html.unescape(text[i:end]))
            i = end
    return "".join(out)


def ctx(text: str) -> RevertContext:
    """A revert whose every untrusted field is ``text`` (and no author login to mention)."""
    return RevertContext(
        revision="0123456789abcdef0123456789abcdef01234567",
        title=text,
        pr_number=12,
        author_login=None,
        builds=(BuildLink(text, 7, None), BuildLink("AMD64", 8, "https://bb.example/#/b/1/8")),
        failures=3,
        explanation=text,
        evidence=(text, "test_x"),
    )


def github_texts(text: str) -> list[str]:
    """Every Markdown text the plugin posts on GitHub, each holding ``text`` wherever it can."""
    c = ctx(text)
    return [
        markdown.text(text),
        markdown.text(text, multiline=True),
        markdown.code(text),
        markdown.code_block(text),
        markdown.link(text, "https://bb.example/x"),
        pr_text.revert_body(c),
        pr_text.reverted_comment(c, "https://github.com/o/r/pull/3", 3),
        pr_text.warning_comment(c, 3600, "/no-revert"),
        pr_text.notice_comment(c, text),
        pr_text.manual_comment(c, text, [text]),
        pr_text.more_builders_comment(c.builds, 3),
        follow_up_text.stand_down_comment(text, closing=False, touched=True),
    ]


def commit_message(text: str) -> str:
    """The revert commit's message as the GitHub adapter writes it, the culprit titled ``text``."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    title = pr_text.revert_title(ctx(text))
    return f"{title}\n\n{references.reverts_commit(sha)}\n\n{references.revert_marker(sha)}"


@settings(max_examples=300)
@given(HOSTILE)
def test_no_markdown_text_holds_a_mention_github_would_render(text):
    for out in github_texts(text):
        assert not MENTION.search(rendered(out)), out
        assert not MENTION.search(out), out


@settings(max_examples=300)
@given(HOSTILE)
def test_no_markdown_text_or_commit_message_holds_a_live_closing_keyword(text):
    for out in [*github_texts(text), commit_message(text)]:
        assert not CLOSING.search(rendered(out)), out


@settings(max_examples=300)
@given(HOSTILE)
def test_no_revert_commit_message_closes_mentions_or_holds_a_control(text):
    message = commit_message(text)
    assert not CLOSING.search(message)
    assert not MENTION.search(message)
    assert not BIDI_AND_CONTROLS.search(message)
    assert len(pr_text.revert_title(ctx(text))) <= untrusted.TITLE_LIMIT


@settings(max_examples=300)
@given(HOSTILE | st.text())
def test_no_terminal_text_holds_a_control_or_bidi_character(text):
    assert not TERMINAL.search(untrusted.for_terminal(text)) and "\n" not in untrusted.for_terminal(
        text
    )
    assert not TERMINAL.search(untrusted.for_terminal(text, multiline=True))
    # Nothing is lost: each character is there, or its escape is.
    assert untrusted.for_terminal(text).count("\\") >= text.count("\\")


@given(HOSTILE | st.text())
def test_no_page_text_holds_a_control_or_bidi_character(text):
    assert not BIDI_AND_CONTROLS.search(untrusted.for_page(text))


@given(HOSTILE, st.integers(min_value=40, max_value=200))
def test_a_cut_text_fits_its_limit_and_says_how_much_was_cut(text, limit):
    out = untrusted.cut(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
    else:
        kept, note = out.rsplit("\u2026 (cut: ", 1)
        assert text.startswith(kept)
        assert note == f"{len(text) - len(kept):,} characters)"


# -- each finding of issue 44, one by one ----------------------------------------------------


def test_a_mention_after_a_backtick_or_a_non_ascii_letter_is_defused():
    for title in ("`@user", "`@org/team", "Café@user", "修复@python/core-team", "ß@a"):
        for out in (markdown.text(title), pr_text.revert_body(ctx(title))):
            assert not MENTION.search(rendered(out)), (title, out)


def test_the_revert_title_and_commit_message_hold_no_escape_or_bidi_character():
    title = "gh-1: \x1b]0;pwned\x07 \u202etxt.exe\u202c \x9b31m done"
    revert = pr_text.revert_title(ctx(title))
    assert revert == 'Revert "gh-1: ]0;pwned txt.exe 31m done"'
    assert not BIDI_AND_CONTROLS.search(commit_message(title))


def test_a_closing_keyword_in_the_culprits_title_is_not_live_in_the_revert_commit():
    title = "gh-1: Fixes #12, closes: python/cpython#3, resolves GH-4 (#5)"
    message = commit_message(title)
    assert not CLOSING.search(message)
    # It reads the same, and the plain references are still there.
    assert message.replace(untrusted.ZWSP, "").startswith(f'Revert "{title}"')


def culprit(title: str) -> RevertContext:
    """A revert whose culprit is titled ``title``, every other field ordinary."""
    return ctx(title)._replace(
        builds=(BuildLink("AMD64", 8, None),), explanation="3 failing builds", evidence=()
    )


def test_a_bare_url_in_a_title_is_not_a_link_in_the_revert_body():
    c = culprit("gh-1: see https://evil.example/x and www.evil.example and ftp://x.example")
    body = pr_text.revert_body(c)
    assert "://" not in body and "www.evil" not in body
    assert "https:\u200b//evil.example/x" in body  # it reads the same


def test_a_culprit_title_of_70000_characters_makes_a_revert_github_accepts():
    c = culprit("gh-1: " + "x" * 70_000)
    title, body = pr_text.revert_title(c), pr_text.revert_body(c)
    assert len(title) <= untrusted.TITLE_LIMIT and title.endswith(' characters)"')
    assert len(body) <= untrusted.BODY_LIMIT - 1_000
    assert "(cut: 69," in title and "(cut: 69," in body
    assert "What to do" in body  # the cut is the title's, not the instructions'


def test_every_comment_fits_githubs_limit_even_with_thousands_of_builders():
    builds = tuple(BuildLink(f"builder {i} " + "y" * 300, i, None) for i in range(2_000))
    c = ctx("gh-1: t")._replace(builds=builds)
    for out in (pr_text.revert_body(c), pr_text.warning_comment(c, 60, "/no")):
        assert len(out) <= untrusted.BODY_LIMIT
        assert out.rstrip().endswith("characters)")
