"""Escaping of untrusted text (commit titles, builder names, log lines) for GitHub Markdown."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buildbot_revert.core import markdown, untrusted

ZWSP = "\u200b"


def test_mentions_of_anyone_are_neutralised():
    out = markdown.text("gh-1: thanks @guido and @python/core-devs, cc @someone")
    assert "@guido" not in out and "@python/core-devs" not in out and "@someone" not in out
    assert out.count("@" + ZWSP) == 3


def test_the_intended_author_mention_is_kept_and_checked():
    assert markdown.mention("alice-b2") == "@alice-b2"
    for bad in ("", "-alice", "alice--b", "al ice", "a" * 40, "x@y", "alice\n@bob"):
        with pytest.raises(ValueError, match="not a GitHub login"):
            markdown.mention(bad)


def test_email_addresses_read_the_same_and_issue_links_survive():
    out = markdown.text("Reported by a@example.com in #1234 (gh-1234)")
    # Every @ is defused, an address's too: it reads the same, unlinked.
    assert "a@example.com" not in out and "a@example.com" in out.replace(ZWSP, "")
    assert "#1234" in out  # auto-links are fine


def test_html_is_escaped():
    out = markdown.text('Title <script>alert("x")</script> <img src=x onerror=y> & co')
    assert "<" not in out and ">" not in out
    assert "&lt;script&gt;" in out and "&amp; co" in out


def test_html_entities_cannot_smuggle_a_mention():
    assert "&#64;" not in markdown.text("&#64;guido").replace("&amp;", "")


def test_links_and_images_are_not_links():
    out = markdown.text("[click](javascript:alert(1)) ![x](https://evil/x.png)")
    assert out.startswith("\\[click\\](") and "\\!\\[x\\](" in out
    assert not re.search(r"(?<!\\)\[", out)


def test_backticks_and_emphasis_are_literal():
    out = markdown.text("use `rm -rf` and **bold** _it_ ~~s~~ | table")
    assert out == "use \\`rm -rf\\` and \\*\\*bold\\*\\* \\_it\\_ \\~\\~s\\~\\~ \\| table"


def test_closing_keywords_cannot_close_issues_when_the_revert_merges():
    out = markdown.text(
        "Fixes #12, closes: python/cpython#3, resolved https://github.com/a/b/issues/4"
    )
    assert not re.search(r"(?i)\b(fixes|closes|resolved)\s*:?\s+\S*#?\d", out.replace(ZWSP, "X"))
    assert "#12" in out  # still a link, just not a closing one


def test_line_starts_cannot_make_headings_lists_or_quotes():
    out = markdown.text("# Heading\n- item\n1. one\n> quote\n=====", multiline=True)
    assert out.splitlines() == [
        "\\# Heading",
        "\\- item",
        "1\\. one",
        "&gt; quote",
        "\\=====",
    ]
    assert "\n" not in markdown.text("one\ntwo\r\nthree")


def test_control_and_bidi_characters_are_dropped():
    assert markdown.text("a\x00b\x1bc\u202ed") == "abcd"


# Every character the helpers must drop: C0 but tab and newline, DEL, C1,
# and the bidirectional marks, embeddings, overrides and isolates.
DROPPED = (
    [chr(c) for c in range(0x20) if chr(c) not in "\t\n"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u061c", "\u200e", "\u200f"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)


def test_strip_controls_drops_control_and_bidi_characters_only():
    assert untrusted.strip_controls("".join(DROPPED)) == ""
    assert (
        untrusted.strip_controls("a\tb\nc\u200bd é 名 \U0001f600")
        == "a\tb\nc\u200bd é 名 \U0001f600"
    )
    title = "gh-1: \u202eexe.txt\u202c \u2067x\u2069 \x07\x9b31m\u200f"
    assert untrusted.strip_controls(title) == "gh-1: exe.txt x 31m"
    for helper in (markdown.text, markdown.code, markdown.code_block):
        out = helper(title)
        assert not set(out) & set(DROPPED), helper


@given(st.text())
def test_no_helper_lets_a_control_or_bidi_character_through(value):
    for out in (markdown.text(value), markdown.code(value), markdown.code_block(value)):
        assert not set(out) & set(DROPPED)


def test_inline_code_fence_outgrows_the_text():
    assert markdown.code("x") == "`x`"
    assert markdown.code("a `` b") == "```a `` b```"
    assert markdown.code("`tick") == "`` `tick ``"
    assert markdown.code("two\nlines") == "`two lines`"


def test_code_block_cannot_be_escaped():
    block = markdown.code_block("ok\n```\n@everyone <b>\n````", language="py; rm")
    lines = block.splitlines()
    assert lines[0] == "`````pyrm" and lines[-1] == "`````"
    assert "@\u200beveryone <b>" in lines  # kept verbatim inside a fence, the @ defused too


def test_links_only_to_http():
    url = "https://buildbot.python.org/#/builders/12/builds/34"
    assert markdown.link("AMD64 [x]", url) == f"[AMD64 \\[x\\]]({url})"
    assert markdown.link("a", "https://x/y (z)") == "[a](https://x/y%20%28z%29)"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//evil", "ftp://x"):
        with pytest.raises(ValueError, match="non-http"):
            markdown.link("a", bad)


@given(st.text())
def test_no_untrusted_text_can_mention_link_or_inject_html(value):
    out = markdown.text(value)
    assert "<" not in out and ">" not in out
    assert not re.search(r"@[\w-]", out)
    assert not re.search(r"(?<!\\)(?:\\\\)*[\[\]`]", out)
    assert "\n" not in out


@given(st.text())
def test_inline_code_always_closes(value):
    out = markdown.code(value)
    fence = re.match(r"`+", out).group()
    assert out.endswith(fence) and fence not in out[len(fence) : -len(fence)]
