"""The rule of standing: whose objection or opt-out label stops a revert, and when."""

from __future__ import annotations

import pytest

from buildbot_revert.core.grace import ObjectionWindow
from buildbot_revert.core.references import MARKER_PREFIX
from buildbot_revert.core.standing import (
    Comment,
    LabelEvent,
    has_standing,
    label_setter,
    needs_role,
    normalise,
    objectors,
    says_no,
)


@pytest.mark.parametrize(
    ("login", "role", "required", "counts"),
    [
        ("ada", None, "write", True),  # the author, whatever her role
        ("ADA", "read", "admin", True),  # logins compare without case
        ("carol", "write", "write", True),
        ("dave", "maintain", "write", True),
        ("erin", "admin", "write", True),
        ("tina", "triage", "write", False),
        ("tina", "triage", "triage", True),
        ("mallory", "read", "write", False),
        ("mallory", "read", "triage", False),
        ("nobody", "none", "write", False),
        ("custom", "security-manager", "write", False),  # a role we cannot rank
        ("unknown", None, "write", False),  # GitHub could not say
        (None, "admin", "write", False),  # a deleted account
    ],
)
def test_the_author_or_a_role_of_at_least_the_required_one(login, role, required, counts):
    assert has_standing(login, "ada", role, required) is counts


def test_a_role_is_asked_only_for_a_known_login_other_than_the_author():
    assert needs_role("carol", "ada")
    assert not needs_role("Ada", "ada")
    assert not needs_role(None, "ada")


WORDS = ("/no-revert", "do not revert", "don't revert")
# The warning was posted at 1000; the revert is filed at the deadline, 1600.
WINDOW = ObjectionWindow(1000.0, 1600.0)


def said(author: str | None, body: str, at: float | None = 1100.0, edited: float | None = None):
    return Comment(author=author, body=body, created_at=at, updated_at=edited)


def test_objectors_are_the_authors_of_comments_holding_a_phrase_once_each_in_order():
    comments = [
        said("mallory", "Please DO NOT REVERT this"),
        said("carol", "looks broken to me"),
        said("carol", "/no-revert, fix coming"),
        said("mallory", "/no-revert"),
        said(None, "do not revert (a deleted account)"),
        said("bot", f"do not revert {MARKER_PREFIX} our own warning quotes the phrase"),
    ]
    assert objectors(comments, ["/no-revert", "do not revert"], WINDOW) == [
        "mallory",
        "carol",
        None,
    ]


def test_only_comments_after_the_warning_and_by_the_deadline_object():
    comments = [
        said("ada", "/no-revert: a review before the merge", at=400.0),
        said("bob", "/no-revert, posted in the warning's second", at=1000.0),
        said("carol", "/no-revert", at=1100.0),
        said("dave", "/no-revert, just in time", at=1600.0),
        said("erin", "/no-revert, too late", at=1601.0),
        said("fay", "/no-revert, time unknown", at=None),
    ]
    assert objectors(comments, WORDS, WINDOW) == ["carol", "dave"]


def test_an_edit_neither_moves_an_old_comment_into_the_window_nor_a_late_one_back():
    comments = [
        # Written before the warning, edited during the grace period to add the phrase.
        said("ada", "LGTM\n/no-revert", at=400.0, edited=1200.0),
        # Written in time, edited after the deadline: what it said in time is unknown.
        said("bob", "/no-revert", at=1100.0, edited=1700.0),
        # Written and edited in time (a typo fixed).
        said("carol", "/no-revert: a fix is coming", at=1100.0, edited=1500.0),
    ]
    assert objectors(comments, WORDS, WINDOW) == ["carol"]


@pytest.mark.parametrize(
    "body",
    [
        "don\u2019t revert, a fix is coming",  # a curly apostrophe (GitHub's editors, phones)
        "Don\u2018t Revert",
        "don\u02bct revert",  # a modifier letter apostrophe
        "do not\nrevert: the test is flaky",  # a line break inside the phrase
        "do not\r\n   revert",
        "do\u00a0not\u2003 revert",  # no-break and em spaces
        "/no\u2011revert",  # a non-breaking hyphen
        "/no\u2010revert",  # a hyphen
        "/no\u2013revert",  # an en dash (macOS and Word make one of --)
        "/no\u2014revert",  # an em dash
        "/no\u2212revert",  # a minus sign
        "/no\ufe63revert",  # a small hyphen-minus
        "\uff0fno-revert",  # a fullwidth solidus (NFKC)
        "/no-\u200brevert",  # a zero-width space: invisible, so the phrase as read
        "/NO-REVERT",
        "DO NOT REVERT",
    ],
)
def test_a_phrase_counts_however_it_is_spelt(body):
    assert says_no(body, WORDS)
    assert objectors([said("carol", body)], WORDS, WINDOW) == ["carol"]


@pytest.mark.parametrize("body", ["/norevert", "do not re vert", "/no revert", "don't  rev ert"])
def test_other_words_are_not_a_phrase(body):
    assert not says_no(body, WORDS)


def test_configured_phrases_are_normalised_too():
    assert says_no("don't revert", ["Don\u2019t\u00a0Revert"])
    assert says_no("/skip\u2013revert", ["/SKIP-REVERT"])
    assert not says_no("anything", ["", "   "])  # an empty phrase matches nothing


def test_a_quote_reply_of_the_warning_is_not_an_objection():
    warning = (
        "If these builders are still red in 10 minutes, a revert pull request will be "
        "opened. To stop it, fix the build, or comment `/no-revert` here with the reason."
    )
    reply = f"> {warning}\n\nThanks, I am looking at it."
    assert objectors([said("carol", reply)], WORDS, WINDOW) == []
    indented = f"   >{warning}\n\t> > do not revert\nOn it."
    assert objectors([said("carol", indented)], WORDS, WINDOW) == []
    # A quote and an answer of one's own: the answer counts.
    assert objectors([said("carol", f"> {warning}\n\n/no-revert")], WORDS, WINDOW) == ["carol"]


def test_a_marker_only_inside_a_quote_does_not_make_a_comment_ours():
    quoted = f"> {MARKER_PREFIX}:abc -->\n> comment `/no-revert` here\n\ndo not revert, please"
    assert objectors([said("carol", quoted)], WORDS, WINDOW) == ["carol"]
    ours = f"{MARKER_PREFIX}:abc -->\ncomment `/no-revert` here"
    assert objectors([said("bot", ours)], WORDS, WINDOW) == []


def test_normalise_gives_one_spelling():
    assert normalise("  Don\u2019t\n\u00a0REVERT \u2014 \u201cplease\u201d ") == (
        'don\'t revert - "please"'
    )


def test_the_label_was_set_by_the_actor_of_its_latest_labeled_event():
    events = [
        LabelEvent("labeled", "skip-auto-revert", "mallory"),
        LabelEvent("unlabeled", "skip-auto-revert", "carol"),
        LabelEvent("labeled", "other", "ada"),
        LabelEvent("labeled", "skip-auto-revert", "dave"),
    ]
    assert label_setter(events, "skip-auto-revert") == "dave"
    assert label_setter(events[:1], "skip-auto-revert") == "mallory"
    assert label_setter(events, "never-set") is None
