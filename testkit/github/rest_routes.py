"""The REST operations the stand-in implements, and :func:`dispatch`, which picks one for a request.

A route is registered for a (method, OpenAPI path template) of GitHub's
description and called, holding the repository's lock, with the path
parameters, the query and the JSON body; it answers (status, payload) or
raises :class:`StandInError` with GitHub's status and message.  A documented
operation without a route is a contract violation: the client calls
something the stand-in cannot vouch for.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

from testkit.github import limits, shapes, shapes_people
from testkit.github.openapi import DOCS, find_operation, validate_request
from testkit.github.state import BOT_LOGIN, Comment, Pull, Repository, StandInError, iso

R = "/repos/{owner}/{repo}"
Params = dict[str, str]
Query = dict[str, list[str]]
Answer = tuple[int, Any]
Route = Callable[[Repository, Params, Query, Any], Answer]
_ROUTES: dict[tuple[str, str], Route] = {}


def dispatch(
    repo: Repository, method: str, path: str, query: Query, body: Any
) -> tuple[int, Any, list[str]]:
    """Answer a REST request: status, payload, and the contract violations it showed."""
    found = find_operation(method, path)
    if found is None:
        return 404, {"message": "Not Found", "documentation_url": DOCS}, []
    op, params = found
    if params.get("owner") is not None and (
        f"{params['owner']}/{params['repo']}" != repo.full_name
    ):
        return 404, {"message": "Not Found", "documentation_url": DOCS}, []
    problems = validate_request(method, path, body) if body is not None else []
    if problems:
        return 422, {"message": "Validation Failed", "documentation_url": DOCS}, problems
    refused = limits.refuse_rest(method, op.template, body)
    if refused is not None:
        return 422, refused, []
    route = _ROUTES.get((method, op.template))
    if route is None:
        unimplemented = f"{method} {op.template}: documented but not implemented by the stand-in"
        return 404, {"message": "Not Found", "documentation_url": DOCS}, [unimplemented]
    try:
        with repo.lock:
            status, payload = route(repo, params, query, body)
            return status, payload, []
    except StandInError as exc:
        if exc.status == 422:
            return 422, {"message": str(exc), "documentation_url": DOCS, "errors": []}, []
        return exc.status, {"message": str(exc), "documentation_url": DOCS}, []


def _route(method: str, template: str) -> Callable[[Route], Route]:
    def register(fn: Route) -> Route:
        _ROUTES[(method, template)] = fn
        return fn

    return register


def _q(query: Query, name: str, default: str = "") -> str:
    return query.get(name, [default])[0]


def _page(items: list[Any], query: Query) -> list[Any]:
    per_page = min(int(_q(query, "per_page", "30")), 100)
    page = max(int(_q(query, "page", "1")), 1)
    return items[(page - 1) * per_page : page * per_page]


def _pull_or_404(repo: Repository, number: str) -> Pull:
    pull = repo.pulls.get(int(number))
    if pull is None:
        raise StandInError(404, "Not Found")
    return pull


@_route("GET", "/rate_limit")
def _rate_limit(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    reset = int(time.time()) + 3600
    core = {"limit": 5000, "remaining": 4999, "reset": reset, "used": 1}
    search = {"limit": 30, "remaining": 30, "reset": reset, "used": 0}
    graph = {"limit": 5000, "remaining": 5000, "reset": reset, "used": 0}
    return 200, {"rate": core, "resources": {"core": core, "search": search, "graphql": graph}}


@_route("GET", "/user")
def _authenticated_user(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    """The user the token acts as: the bot, who opens every PR and comment the client makes."""
    return 200, shapes_people.authenticated_user(repo, BOT_LOGIN)


@_route("GET", R + "/commits/{commit_sha}/pulls")
def _commit_pulls(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    sha = repo.resolve_commitish(params["commit_sha"])
    found = [
        pr
        for pr in repo.pulls.values()
        if pr.merge_commit_sha == sha
        or sha in repo.ancestors(pr.head_sha) - repo.ancestors(pr.base_sha)
    ]
    return 200, [shapes.pull_request_simple(repo, pr) for pr in _page(found, query)]


@_route("GET", R + "/commits/{ref}")
def _get_commit(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    """A commit with its files' patches; GitHub's 422 for a commit id it does not know."""
    try:
        sha = repo.resolve_commitish(params["ref"])
    except StandInError:
        raise StandInError(422, f"No commit found for SHA: {params['ref']}") from None
    return 200, shapes.commit_with_files(repo, repo.commits[sha])


@_route("GET", R + "/pulls")
def _list_pulls(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    state = _q(query, "state", "open")
    pulls = [pr for pr in repo.pulls.values() if state == "all" or pr.state == state]
    if "head" in query:
        # ``user:ref``: the branch ``ref`` in ``user``'s repository (a fork's, or this one).
        owner, _, ref = _q(query, "head").partition(":")
        pulls = [
            pr
            for pr in pulls
            if owner == (pr.fork or repo.full_name).split("/")[0] and pr.head_ref == ref
        ]
    if "base" in query:
        pulls = [pr for pr in pulls if pr.base_ref == _q(query, "base")]
    key = {"created": "created_at", "updated": "updated_at"}.get(_q(query, "sort", "created"))
    pulls.sort(key=lambda pr: (getattr(pr, key or "created_at"), pr.number))
    if _q(query, "direction", "desc") == "desc":
        pulls.reverse()
    return 200, [shapes.pull_request_simple(repo, pr) for pr in _page(pulls, query)]


@_route("POST", R + "/pulls")
def _create_pull(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    head = body["head"].split(":")[-1]
    base = body["base"]
    if f"refs/heads/{head}" not in repo.refs or f"refs/heads/{base}" not in repo.refs:
        raise StandInError(422, "Validation Failed: head or base does not exist")
    for pr in repo.pulls.values():
        if pr.state == "open" and not pr.fork and pr.head_ref == head and pr.base_ref == base:
            raise StandInError(422, f"A pull request already exists for {repo.owner}:{head}.")
    title, text, draft = body.get("title", ""), body.get("body"), bool(body.get("draft"))
    pull = repo.open_pull_as_bot(title, text, head, base, draft)
    return 201, shapes.pull_request(repo, pull)


@_route("GET", R + "/pulls/{pull_number}")
def _get_pull(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    return 200, shapes.pull_request(repo, _pull_or_404(repo, params["pull_number"]))


@_route("PATCH", R + "/pulls/{pull_number}")
def _update_pull(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    pull = _pull_or_404(repo, params["pull_number"])
    for key in ("title", "body"):
        if key in body:
            setattr(pull, key, body[key])
    if body.get("state") in ("open", "closed") and not pull.merged:
        pull.state = body["state"]
        pull.closed_at = iso(time.time()) if pull.state == "closed" else None
    pull.updated_at = repo.next_timestamp()
    return 200, shapes.pull_request(repo, pull)


@_route("GET", R + "/pulls/{pull_number}/files")
def _pull_files(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    pull = _pull_or_404(repo, params["pull_number"])
    return 200, _page(shapes.pull_files(repo, pull), query)


@_route("GET", R + "/issues/{issue_number}/comments")
def _list_comments(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    _pull_or_404(repo, params["issue_number"])
    comments = repo.comments_on(int(params["issue_number"]))
    return 200, [shapes.issue_comment(repo, c) for c in _page(comments, query)]


@_route("POST", R + "/issues/{issue_number}/comments")
def _create_comment(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    _pull_or_404(repo, params["issue_number"])
    number = int(params["issue_number"])
    comment = Comment(repo.new_id(), number, body["body"], BOT_LOGIN, repo.next_timestamp())
    repo.comments.append(comment)
    return 201, shapes.issue_comment(repo, comment)


@_route("PATCH", R + "/issues/comments/{comment_id}")
def _update_comment(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    for i, c in enumerate(repo.comments):
        if c.id == int(params["comment_id"]):
            if c.user != BOT_LOGIN:
                raise StandInError(403, "Must have admin rights to Repository.")
            repo.comments[i] = Comment(c.id, c.issue_number, body["body"], c.user, c.created_at)
            return 200, shapes.issue_comment(repo, repo.comments[i])
    raise StandInError(404, "Not Found")


@_route("GET", R + "/pulls/{pull_number}/reviews")
def _list_reviews(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    number = _pull_or_404(repo, params["pull_number"]).number
    reviews = [r for r in repo.reviews if r.pull_number == number]
    return 200, [shapes.review(repo, r) for r in _page(reviews, query)]


@_route("POST", R + "/pulls/{pull_number}/reviews")
def _create_review(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    number = _pull_or_404(repo, params["pull_number"]).number
    state = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
        (body or {}).get("event", ""), "COMMENTED"
    )
    review = repo.review_as(number, BOT_LOGIN, state, (body or {}).get("body", ""))
    return 200, shapes.review(repo, review)


@_route("GET", R + "/pulls/{pull_number}/commits")
def _pull_commits(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    number = _pull_or_404(repo, params["pull_number"]).number
    return 200, [shapes.commit(repo, c) for c in _page(repo.pull_commits(number), query)]


@_route("PUT", R + "/pulls/{pull_number}/merge")
def _merge_pull(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    number = _pull_or_404(repo, params["pull_number"]).number
    sha = repo.merge_pull(number, BOT_LOGIN)
    return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}


@_route("POST", R + "/issues/{issue_number}/labels")
def _add_labels(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    pull = _pull_or_404(repo, params["issue_number"])
    # GitHub takes {"labels": [...]} or a bare list, of names or of {"name": ...}.
    entries = body["labels"] if isinstance(body, dict) else body
    names = [n if isinstance(n, str) else n["name"] for n in entries]
    for name in names:
        repo.label_as(pull.number, BOT_LOGIN, name)
    return 200, [shapes.label(repo, name) for name in pull.labels]


@_route("GET", R + "/issues/{issue_number}/labels")
def _get_labels(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    pull = _pull_or_404(repo, params["issue_number"])
    return 200, [shapes.label(repo, name) for name in pull.labels]


@_route("GET", R + "/issues/{issue_number}/events")
def _issue_events(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    """The issue's label events, oldest first, a page at a time."""
    number = _pull_or_404(repo, params["issue_number"]).number
    events = [e for e in repo.events if e.issue_number == number]
    return 200, [shapes_people.issue_event(repo, e) for e in _page(events, query)]


@_route("GET", R + "/collaborators/{username}/permission")
def _permission(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    """A user's role; every login is a user here (GitHub's 404 is for none)."""
    return 200, shapes_people.collaborator_permission(repo, params["username"])


@_route("GET", R + "/git/commits/{commit_sha}")
def _get_git_commit(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    commit = repo.commits.get(params["commit_sha"])
    if commit is None:
        raise StandInError(404, "Not Found")
    return 200, shapes.git_commit(repo, commit)


@_route("POST", R + "/git/commits")
def _create_git_commit(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    parents = list(body.get("parents", []))
    if body["tree"] not in repo.trees or any(parent not in repo.commits for parent in parents):
        raise StandInError(422, "Tree SHA or parent SHA does not exist")
    sha = repo.store_commit(body["tree"], parents, body["message"], BOT_LOGIN)
    return 201, shapes.git_commit(repo, repo.commits[sha])


@_route("GET", R + "/git/trees/{tree_sha}")
def _get_tree(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    if params["tree_sha"] not in repo.trees:
        raise StandInError(404, "Not Found")
    recursive = _q(query, "recursive") not in ("", "0", "false")
    return 200, shapes.git_tree(repo, params["tree_sha"], recursive)


@_route("POST", R + "/git/trees")
def _create_tree(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    base = body.get("base_tree")
    if base is not None and base not in repo.trees:
        raise StandInError(422, "base_tree does not exist")
    entries = dict(repo.trees[base]) if base else {}
    for item in body["tree"]:
        if "content" in item:
            entries[item["path"]] = (item["mode"], repo.store_blob(item["content"].encode()))
        elif item.get("sha") is None:
            entries.pop(item["path"], None)
        elif item["sha"] in repo.blobs:
            entries[item["path"]] = (item["mode"], item["sha"])
        else:
            raise StandInError(422, f"sha {item['sha']} is not a blob")
    return 201, shapes.git_tree(repo, repo.store_tree(entries), recursive=True)


@_route("GET", R + "/git/ref/{ref}")
def _get_ref(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    ref = "refs/" + params["ref"]
    if ref not in repo.refs:
        raise StandInError(404, "Not Found")
    return 200, shapes.git_ref(repo, ref)


@_route("POST", R + "/git/refs")
def _create_ref(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    ref = body["ref"]
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise StandInError(422, f"{ref} is not a valid ref name.")
    if ref in repo.refs:
        raise StandInError(422, "Reference already exists")
    if body["sha"] not in repo.commits:
        raise StandInError(422, "Object does not exist")
    repo.refs[ref] = body["sha"]
    return 201, shapes.git_ref(repo, ref)


@_route("GET", R + "/compare/{basehead}")
def _compare(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    base_name, sep, head_name = params["basehead"].partition("...")
    if not sep:
        raise StandInError(404, "Not Found")
    base, head = repo.resolve_commitish(base_name), repo.resolve_commitish(head_name)
    merge_base = repo.merge_base(base, head)
    ahead = repo.ancestors(head) - repo.ancestors(base)
    behind = repo.ancestors(base) - repo.ancestors(head)
    status = (
        "identical"
        if not ahead and not behind
        else "ahead"
        if not behind
        else "behind"
        if not ahead
        else "diverged"
    )
    commits = sorted(ahead, key=repo.generation)
    html = shapes.html_url(repo, f"/compare/{params['basehead']}")
    return 200, {
        "url": shapes.api_url(repo, f"/compare/{params['basehead']}"),
        "html_url": html,
        "permalink_url": shapes.html_url(
            repo, f"/compare/{repo.owner}:{base}...{repo.owner}:{head}"
        ),
        "diff_url": html + ".diff",
        "patch_url": html + ".patch",
        "base_commit": shapes.commit(repo, repo.commits[base]),
        "merge_base_commit": shapes.commit(repo, repo.commits[merge_base]),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [shapes.commit(repo, repo.commits[c]) for c in commits],
        "files": shapes.diff_entries(repo, repo.commits[merge_base].tree, repo.commits[head].tree),
    }


@_route("GET", "/search/issues")
def _search_issues(repo: Repository, params: Params, query: Query, body: Any) -> Answer:
    """GitHub's issue search, for the qualifiers the clients use on pull requests.

    ``repo:``, ``is:pr``, ``in:title`` and ``created:FROM..TO`` (days); every
    other word must appear, in any case, in the title (and the body, without
    ``in:title``).  Only pull requests are held, so ``is:issue`` finds none.
    """
    words: list[str] = []
    qualifiers: dict[str, str] = {}
    for term in shlex.split(_q(query, "q")):
        key, sep, value = term.partition(":")
        if sep and key in ("repo", "is", "in", "created"):
            qualifiers[key] = value
        else:
            words.append(term.lower())
    if "repo" in qualifiers and qualifiers["repo"] != repo.full_name:
        raise StandInError(
            422,
            "The listed users and repositories cannot be searched either because the "
            "resources do not exist or you do not have permission to view them.",
        )
    found = [] if qualifiers.get("is", "pr") != "pr" else list(repo.pulls.values())
    if "created" in qualifiers:
        lo, _, hi = qualifiers["created"].partition("..")
        found = [pr for pr in found if lo <= pr.created_at[:10] <= (hi or lo)]

    def matches(pr: Pull) -> bool:
        where = pr.title if qualifiers.get("in") == "title" else f"{pr.title} {pr.body or ''}"
        return all(word in where.lower() for word in words)

    found = sorted((pr for pr in found if matches(pr)), key=lambda pr: pr.number)
    return 200, {
        "total_count": len(found),
        "incomplete_results": False,
        "search_type": "lexical",
        "items": [shapes.issue_search_result_item(repo, pr) for pr in _page(found, query)],
    }
