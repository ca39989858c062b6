"""The GitHub stand-in holds itself (and its clients) to GitHub's published descriptions.

Plain blocking HTTP (urllib) here: these tests check the stand-in, not the client.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request

import pytest

from testkit.github import (
    DEFAULT_TOKEN,
    SECONDARY_RATE_LIMIT_MESSAGE,
    Fault,
    GitHubStandIn,
)
from testkit.github.graphql_api import validate_graphql
from testkit.github.openapi import openapi_to_json_schema, validate_request, validate_response


def call(github, method, path, body=None, token=DEFAULT_TOKEN):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(github.base_url + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def test_a_wrong_body_is_detected_by_the_validator(github):
    number, _ = github.add_merged_pr("t", "alice", {"a": "1"})
    status, _, good = call(github, "GET", f"/repos/python/cpython/pulls/{number}")
    path = f"/repos/python/cpython/pulls/{number}"
    assert status == 200 and validate_response("GET", path, 200, good) == []

    wrong = dict(good, state="weird", number="1")
    del wrong["head"]
    problems = validate_response("GET", path, 200, wrong)

    assert any("state" in p and "weird" in p for p in problems)
    assert any("number" in p for p in problems)
    assert any("'head' is a required property" in p for p in problems)


def test_undocumented_statuses_and_unknown_paths_are_violations():
    assert validate_response("GET", "/repos/o/r/pulls/1", 201, {}) != []
    assert validate_response("GET", "/repos/o/r/nothing", 200, {}) != []
    # Errors GitHub sends on any path must still have the basic-error shape.
    assert validate_response("POST", "/repos/o/r/pulls", 502, {"message": "x"}) == []
    assert validate_response("POST", "/repos/o/r/pulls", 502, {"message": 5}) != []


def test_a_corrupted_response_fails_the_test_loudly():
    standin = GitHubStandIn().start()
    try:
        standin.inject("GET", "/rate_limit", Fault.corrupt(lambda body: {"rate": body["rate"]}))
        status, _, body = call(standin, "GET", "/rate_limit")
    finally:
        standin.stop()

    assert status == 500 and "violates" in body["message"]
    with pytest.raises(AssertionError, match="'resources' is a required property"):
        standin.check()


def test_request_bodies_are_validated_too():
    standin = GitHubStandIn().start()
    try:
        status, _, _ = call(standin, "POST", "/repos/python/cpython/pulls", {"title": "no head"})
    finally:
        standin.stop()
    assert status == 422
    assert any("'head' is a required property" in v for v in standin.violations)
    assert (
        validate_request("POST", "/repos/o/r/git/refs", {"ref": "refs/heads/x", "sha": "a"}) == []
    )


def test_graphql_documents_are_validated_against_the_schema():
    _, ok = validate_graphql(
        'query { repository(owner: "a", name: "b") { pullRequest(number: 1) { id } } }'
    )
    _, bad = validate_graphql("mutation { revertPullRequest(input: {number: 1}) { nonsense } }")
    _, syntax = validate_graphql("query {")
    assert ok == [] and bad and syntax

    standin = GitHubStandIn().start()
    try:
        status, _, body = call(
            standin, "POST", "/graphql", {"query": "query { viewer { nonsense } }"}
        )
    finally:
        standin.stop()
    assert status == 200 and "nonsense" in body["errors"][0]["message"]
    with pytest.raises(AssertionError, match="nonsense"):
        standin.check()


def test_graphql_revert_creates_branch_and_pr_natively(github):
    number, sha = github.add_merged_pr("gh-1: x", "alice", {"a.txt": "new\n"})
    query = (
        "mutation($id: ID!) { revertPullRequest(input: {pullRequestId: $id, draft: true}) {"
        " revertPullRequest { number state isDraft headRefName body } } }"
    )
    status, _, body = call(
        github,
        "POST",
        "/graphql",
        {"query": query, "variables": {"id": github.pulls[number].node_id}},
    )

    pr = body["data"]["revertPullRequest"]["revertPullRequest"]
    assert status == 200 and pr["state"] == "OPEN" and pr["isDraft"] is True
    assert pr["headRefName"] == f"revert-{number}-alice/pr-{number}"
    assert pr["body"] == f"Reverts python/cpython#{number}"
    assert github.file_at(pr["headRefName"], "a.txt") is None
    assert (
        f"This reverts commit {sha}."
        in github.commits[github.refs["refs/heads/" + pr["headRefName"]]].message
    )


def test_the_token_is_required_and_never_echoed():
    standin = GitHubStandIn().start()
    try:
        number, _ = standin.add_merged_pr("t", "alice", {"a": "1"})
        assert call(standin, "GET", "/rate_limit", token=None)[0] == 401
        assert call(standin, "GET", "/rate_limit", token="wrong")[0] == 401
        status, _, body = call(
            standin,
            "POST",
            f"/repos/python/cpython/issues/{number}/comments",
            {"body": DEFAULT_TOKEN},
        )
    finally:
        standin.stop()
    assert status == 500 and DEFAULT_TOKEN not in json.dumps(body)
    with pytest.raises(AssertionError, match="contains the token"):
        standin.check()


def test_rate_limit_faults_look_like_githubs(github):
    github.inject("GET", "/rate_limit", Fault.secondary_rate_limit(retry_after=42))
    github.inject("GET", "/repos/*/pulls", Fault.primary_rate_limit(reset_in=60))

    status, headers, body = call(github, "GET", "/rate_limit")
    assert (status, headers["retry-after"], body["message"]) == (
        403,
        "42",
        SECONDARY_RATE_LIMIT_MESSAGE,
    )
    status, headers, _ = call(github, "GET", "/repos/python/cpython/pulls")
    assert status == 403 and headers["x-ratelimit-remaining"] == "0"
    assert int(headers["x-ratelimit-reset"]) > 0
    assert call(github, "GET", "/rate_limit")[0] == 200  # faults are used up


def test_a_lost_response_still_performs_the_write(github):
    number, _ = github.add_merged_pr("t", "alice", {"a": "1"})
    github.inject("POST", "/repos/*/issues/*/comments", Fault.lost_response())

    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError)):
        call(github, "POST", f"/repos/python/cpython/issues/{number}/comments", {"body": "hi"})

    assert [c.body for c in github.comments_on(number)] == ["hi"]


def test_compare_and_git_data_follow_history(github):
    number, sha = github.add_merged_pr("t", "alice", {"a.txt": "1\n", "b.txt": "2\n"})
    later = github.push_commit("later", {"b.txt": "3\n"})

    _, _, comparison = call(github, "GET", f"/repos/python/cpython/compare/{sha}...main")
    assert (comparison["status"], comparison["ahead_by"]) == ("ahead", 1)
    assert [f["filename"] for f in comparison["files"]] == ["b.txt"]
    assert comparison["commits"][0]["sha"] == later
    _, _, files = call(github, "GET", f"/repos/python/cpython/pulls/{number}/files")
    assert sorted(f["filename"] for f in files) == ["a.txt", "b.txt"]
    _, _, ref = call(github, "GET", "/repos/python/cpython/git/ref/heads/main")
    assert ref["object"]["sha"] == later
    assert (
        call(
            github, "POST", "/repos/python/cpython/git/refs", {"ref": "refs/heads/main", "sha": sha}
        )[0]
        == 422
    )


def test_openapi_nullable_becomes_json_schema():
    assert openapi_to_json_schema({"type": "string", "nullable": True}) == {
        "type": ["string", "null"]
    }
    assert openapi_to_json_schema({"$ref": "#/x", "nullable": True}) == {
        "anyOf": [{"type": "null"}, {"$ref": "#/x"}]
    }
    assert openapi_to_json_schema({"enum": ["a"], "type": "string", "nullable": True})["enum"] == [
        "a",
        None,
    ]
