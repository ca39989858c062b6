"""GitHub's GraphQL API as the stand-in serves it: the schema, validating documents, executing them.

Every document is parsed and validated against GitHub's whole public schema
(``descriptions/schema.graphql``), so a query GitHub would reject fails here
too; what resolves to data is what a revert needs: ``repository.pullRequest``,
``node`` and the ``revertPullRequest`` mutation.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import graphql

from testkit.github import limits
from testkit.github.openapi import DESCRIPTIONS
from testkit.github.shapes import html_url
from testkit.github.state import Pull, Repository


class GraphQLUserError(Exception):
    """An error GitHub itself would return (as opposed to a stand-in violation)."""


@cache
def graphql_schema() -> graphql.GraphQLSchema:
    """GitHub's public GraphQL schema.

    ``assume_valid``: GitHub's own schema has a duplicated field and deprecated
    fields implementing non-deprecated interface fields, which graphql-core 3.3
    rejects as an invalid *schema*; documents are still validated against it.
    """
    sdl = (DESCRIPTIONS / "schema.graphql").read_text(encoding="utf-8")
    return graphql.build_schema(sdl, assume_valid_sdl=True, assume_valid=True)


def validate_graphql(document: str) -> tuple[graphql.DocumentNode | None, list[str]]:
    """Parse and validate a GraphQL document against GitHub's schema."""
    try:
        parsed = graphql.parse(document)
    except graphql.GraphQLError as exc:
        return None, [f"graphql syntax: {exc.message}"]
    errors = graphql.validate(graphql_schema(), parsed)
    return parsed, [f"graphql: {e.message}" for e in errors]


def execute(repo: Repository, body: Any, revert_error: str | None) -> tuple[int, Any, list[str]]:
    """Answer the body of a ``POST /graphql``: status, payload, and contract violations.

    ``revert_error``, when set, is the error GitHub gives every ``revertPullRequest``.
    """
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return 400, {"message": "Problems parsing JSON"}, ["graphql: request body has no query"]
    document, problems = validate_graphql(body["query"])
    if problems or document is None:
        return 200, {"errors": [{"message": p} for p in problems]}, problems
    with repo.lock:
        result = graphql.execute(
            graphql_schema(),
            document,
            root_value=_root(repo, revert_error),
            variable_values=body.get("variables"),
            operation_name=body.get("operationName"),
        )
    assert isinstance(result, graphql.ExecutionResult), "every resolver is synchronous"
    out: dict[str, Any] = {"data": result.data}
    violations = []
    if result.errors:
        out["errors"] = []
        for error in result.errors:
            original = error.original_error
            if not isinstance(original, GraphQLUserError):
                violations.append(f"graphql execution: {error.message}")
            entry = {
                "message": error.message,
                "path": error.path,
                "type": "UNPROCESSABLE" if original else "INTERNAL",
            }
            out["errors"].append(entry)
    return 200, out, violations


def _root(repo: Repository, revert_error: str | None) -> dict[str, Any]:
    def repository(info: Any, owner: str, name: str, **_: Any) -> dict[str, Any] | None:
        if f"{owner}/{name}" != repo.full_name:
            return None
        return {
            "__typename": "Repository",
            "id": repo.node_id("R", 0),
            "name": repo.name,
            "nameWithOwner": repo.full_name,
            "pullRequest": lambda info, number: (
                pull_request(repo, repo.pulls[number]) if number in repo.pulls else None
            ),
        }

    def revert_pull_request(info: Any, input: dict[str, Any]) -> dict[str, Any]:
        if revert_error:
            raise GraphQLUserError(revert_error)
        too_long = limits.refuse_graphql(input)
        if too_long:
            raise GraphQLUserError(too_long)
        return _revert(repo, input)

    return {
        "repository": repository,
        "revertPullRequest": revert_pull_request,
        "node": lambda info, id: _node(repo, id),
    }


def _node(repo: Repository, node_id: str) -> dict[str, Any] | None:
    for pull in repo.pulls.values():
        if pull.node_id == node_id:
            return pull_request(repo, pull)
    return None


def pull_request(repo: Repository, pr: Pull) -> dict[str, Any]:
    """A ``PullRequest`` object, with the fields the client may select."""
    merge = repo.commits.get(pr.merge_commit_sha or "")
    return {
        "__typename": "PullRequest",
        "id": pr.node_id,
        "number": pr.number,
        "title": pr.title,
        "body": pr.body or "",
        "url": html_url(repo, f"/pull/{pr.number}"),
        "permalink": html_url(repo, f"/pull/{pr.number}"),
        "state": "MERGED" if pr.merged else pr.state.upper(),
        "merged": pr.merged,
        "closed": pr.state == "closed",
        "isDraft": pr.draft,
        "headRefName": pr.head_ref,
        "headRepository": {"__typename": "Repository", "nameWithOwner": pr.fork or repo.full_name},
        "baseRefName": pr.base_ref,
        "headRefOid": pr.head_sha,
        "baseRefOid": pr.base_sha,
        "createdAt": pr.created_at,
        "updatedAt": pr.updated_at,
        "mergedAt": pr.merged_at,
        "closedAt": pr.closed_at,
        "mergeCommit": None
        if merge is None
        else {
            "__typename": "Commit",
            "oid": merge.sha,
            "message": merge.message,
            "messageHeadline": merge.message.splitlines()[0],
        },
        "author": {"__typename": "User", "login": pr.user},
        "labels": lambda info, **kw: {
            "totalCount": len(pr.labels),
            "nodes": [{"__typename": "Label", "name": name} for name in pr.labels],
        },
    }


def _revert(repo: Repository, input: dict[str, Any]) -> dict[str, Any]:
    """The ``revertPullRequest`` mutation, with GitHub's errors for what it refuses."""
    pull = next((p for p in repo.pulls.values() if p.node_id == input["pullRequestId"]), None)
    if pull is None:
        raise GraphQLUserError(
            f"Could not resolve to a node with the global id of '{input['pullRequestId']}'"
        )
    if not pull.merged or pull.merge_commit_sha is None:
        raise GraphQLUserError("Pull request is not merged and cannot be reverted")
    title = input.get("title") or f'Revert "{pull.title}"'
    body = input.get("body") or f"Reverts {repo.full_name}#{pull.number}"
    new = repo.open_revert_pull(pull, title, body, bool(input.get("draft")))
    if new is None:
        raise GraphQLUserError("This pull request could not be reverted automatically")
    return {
        "clientMutationId": input.get("clientMutationId"),
        "pullRequest": pull_request(repo, pull),
        "revertPullRequest": pull_request(repo, new),
    }
