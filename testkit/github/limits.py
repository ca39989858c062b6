"""GitHub's length limits on what the client writes: a title of 256 characters, a body of 65,536.

GitHub's API descriptions do not state them; GitHub enforces them all the
same, and answers a write over either with ``422 Validation Failed`` (REST)
or an ``UNPROCESSABLE`` error (GraphQL), as clients have long reported
(e.g. renovatebot/renovate#2032, googleapis/repo-automation-bots#1895):

    {"message": "Validation Failed",
     "errors": [{"resource": "Issue", "code": "custom", "field": "body",
                 "message": "body is too long (maximum is 65536 characters)"}],
     "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}

The stand-in checks every pull request and comment write against them, so a
test catches a text GitHub would refuse.  Characters are code points, as
GitHub counts them.
"""

from __future__ import annotations

from typing import Any

from testkit.github.openapi import DOCS

TITLE_LIMIT = 256
BODY_LIMIT = 65_536
# The REST writes that carry a title or a body, and what GitHub calls the resource.
_RESOURCES = {
    ("POST", "/repos/{owner}/{repo}/pulls"): "PullRequest",
    ("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"): "PullRequest",
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "IssueComment",
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "IssueComment",
}


def too_long(fields: dict[str, Any]) -> list[dict[str, str]]:
    """GitHub's error entries for the ``title`` and ``body`` in ``fields`` over their limits."""
    errors = []
    for field, limit in (("title", TITLE_LIMIT), ("body", BODY_LIMIT)):
        value = fields.get(field)
        if isinstance(value, str) and len(value) > limit:
            errors.append(
                {
                    "code": "custom",
                    "field": field,
                    "message": f"{field} is too long (maximum is {limit} characters)",
                }
            )
    return errors


def refuse_rest(method: str, template: str, body: Any) -> dict[str, Any] | None:
    """GitHub's 422 payload when a REST write's title or body is too long, else None."""
    resource = _RESOURCES.get((method, template))
    if resource is None or not isinstance(body, dict):
        return None
    errors = too_long(body)
    if not errors:
        return None
    return {
        "message": "Validation Failed",
        "errors": [{"resource": resource, **e} for e in errors],
        "documentation_url": DOCS,
    }


def refuse_graphql(fields: dict[str, Any]) -> str | None:
    """The GraphQL error message when a mutation's title or body is too long, else None."""
    errors = too_long(fields)
    return "; ".join(e["message"].capitalize() for e in errors) or None
