"""PR and comment texts: what they say, and that untrusted text cannot misbehave."""

from __future__ import annotations

from buildbot_revert.core import feedback, pr_text, references
from buildbot_revert.core.pr_text import BuildLink, RevertContext


def ctx(**kw) -> RevertContext:
    base = dict(
        revision="0123456789abcdef0123456789abcdef01234567",
        title="gh-42: Speed up the parser (#123)",
        pr_number=123,
        author_login="ada",
        builds=(
            BuildLink("AMD64 Debian", 7, "http://bb.example/#/builders/3/builds/7"),
            BuildLink("AMD64 Debian", 8, "http://bb.example/#/builders/3/builds/8"),
            BuildLink("ARM64 macOS", 2, None),
        ),
        failures=3,
        explanation="3 consecutive failing builds after a green build",
        evidence=("test_parser",),
    )
    base.update(kw)
    return RevertContext(**base)


def test_the_revert_body_says_who_what_why_and_what_to_do():
    body = pr_text.revert_body(ctx())
    assert "@ada" in body
    assert "`AMD64 Debian`" in body and "`ARM64 macOS`" in body
    assert "[#7](http://bb.example/#/builders/3/builds/7)" in body
    assert "#2" in body  # no URL known: plain text
    assert "3 consecutive failing builds" in body
    assert "`test_parser`" in body
    assert "What to do" in body and "close this PR" in body
    # How to report it wrong, as the follow-up reads it (the body itself is no report).
    assert "comments `/wrong-revert` on this PR" in body
    assert "label `buildbot-revert: wrong`" in body
    assert not feedback.is_report(body)
    assert pr_text.revert_title(ctx()) == 'Revert "gh-42: Speed up the parser (#123)"'


def test_untrusted_text_cannot_mention_format_or_close_issues():
    evil = ctx(
        title="Fix @python/core-devs <img src=x> **now** fixes #99",
        author_login="not a login!",
        explanation="see @someone",
        evidence=("test_`x`",),
    )
    body = pr_text.revert_body(evil)
    assert "@python/core-devs" not in body and "@someone" not in body
    assert "<img" not in body
    assert "**now**" not in body
    assert "fixes #99" not in body.lower()
    assert "@not" not in body and "the author" in body


def test_comments_link_the_revert_or_say_why_there_is_none():
    c = ctx()
    reverted = pr_text.reverted_comment(c, "https://github.com/python/cpython/pull/200", 200)
    assert "[#200](https://github.com/python/cpython/pull/200)" in reverted and "@ada" in reverted
    warning = pr_text.warning_comment(c, 3600, "/no-revert")
    assert "1 hour(s)" in warning and "`/no-revert`" in warning
    # The phrase is the master's own setting, and a setting is shown as code
    # (where, as everywhere in a text the bot posts, no @ is live).
    assert "`` `stop` @\u200bhere ``" in pr_text.warning_comment(c, 3600, "`stop` @here")
    manual = pr_text.manual_comment(c, "files changed since", ["Lib/a.py"])
    assert "manual revert is needed" in manual and "`Lib/a.py`" in manual
    assert "daily cap" in pr_text.notice_comment(c, "the daily cap of 3 revert PR(s) is reached")
    for text in (reverted, warning, manual):
        assert text.startswith(references.MARKER)
