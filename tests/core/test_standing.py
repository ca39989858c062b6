"""The rule of standing: whose objection or opt-out label stops a revert."""

from __future__ import annotations

import pytest

from buildbot_revert.core.references import MARKER_PREFIX
from buildbot_revert.core.standing import (
    LabelEvent,
    has_standing,
    label_setter,
    needs_role,
    objectors,
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


def test_objectors_are_the_authors_of_comments_holding_a_phrase_once_each_in_order():
    comments = [
        ("mallory", "Please DO NOT REVERT this"),
        ("carol", "looks broken to me"),
        ("carol", "/no-revert, fix coming"),
        ("mallory", "/no-revert"),
        (None, "do not revert (a deleted account)"),
        ("bot", f"do not revert {MARKER_PREFIX} our own warning quotes the phrase"),
    ]
    assert objectors(comments, ["/no-revert", "do not revert"]) == ["mallory", "carol", None]


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
