"""Who is who and who may do what: the token's user, a collaborator's permission, label events.

Kept beside :mod:`.shapes` (which shapes the repository's objects) for
``GET /user`` (the user the token acts as, a ``private-user``: the bot
knows its own revert pull requests by that login) and the two answers the
permission rule reads: ``GET .../collaborators/{username}/permission``
(``permission`` is GitHub's older four-level name, ``role_name`` the role
itself: a triager's ``permission`` is ``read``) and ``GET .../issues/{n}/events``
(who set a label, ``actor.login`` of a ``labeled`` event).
"""

from __future__ import annotations

from typing import Any

from testkit.github.shapes import api_url, simple_user
from testkit.github.state import ROLES, IssueEvent, Repository

# The older ``permission`` field of each role (GitHub maps maintain to write, triage to read).
_LEGACY = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


def authenticated_user(repo: Repository, login: str) -> dict[str, Any]:
    """``GET /user`` for ``login``'s token: GitHub's ``private-user``, as a token sees itself."""
    return {
        **simple_user(repo, login),
        "user_view_type": "private",
        "name": None,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": "2024-01-02T03:04:05Z",
        "updated_at": "2024-01-02T03:04:05Z",
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
    }


def collaborator_permission(repo: Repository, login: str) -> dict[str, Any]:
    """``GET /repos/{o}/{r}/collaborators/{username}/permission`` for ``login``."""
    role = repo.role_of(login)
    rank = ROLES.index(role)
    user = {
        **simple_user(repo, login),
        "permissions": {
            "pull": rank >= ROLES.index("read"),
            "triage": rank >= ROLES.index("triage"),
            "push": rank >= ROLES.index("write"),
            "maintain": rank >= ROLES.index("maintain"),
            "admin": role == "admin",
        },
        "role_name": role,
    }
    return {"permission": _LEGACY[role], "role_name": role, "user": user}


def issue_event(repo: Repository, e: IssueEvent) -> dict[str, Any]:
    """One ``labeled``/``unlabeled`` event of ``GET /repos/{o}/{r}/issues/{n}/events``."""
    return {
        "id": e.id,
        "node_id": repo.node_id("LE", e.id),
        "url": api_url(repo, f"/issues/events/{e.id}"),
        "actor": simple_user(repo, e.actor),
        "event": e.event,
        "commit_id": None,
        "commit_url": None,
        "created_at": e.created_at,
        "performed_via_github_app": None,
        "label": {"name": e.label, "color": "ededed"},
    }
