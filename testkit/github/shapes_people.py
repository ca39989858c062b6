"""Who may do what: a collaborator's permission and an issue's label events, as GitHub shapes them.

Kept beside :mod:`.shapes` (which shapes the repository's objects) for the
two answers the permission rule reads: ``GET .../collaborators/{username}/permission``
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
