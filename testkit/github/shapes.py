"""The JSON the REST routes answer with, one function per schema of GitHub's description.

Each function is named after the component it renders (``pull-request-simple``
-> :func:`pull_request_simple`) and fills every field the schema requires, so
that the responses validate; fields the client never reads get GitHub's
typical values.
"""

from __future__ import annotations

import difflib
import time
from typing import Any

from testkit.github.state import Comment, Commit, Pull, Repository, Review, iso, sha1

# The URL templates of a repository object, relative to its API URL.
_REPOSITORY_URL_TEMPLATES = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def api_url(repo: Repository, suffix: str = "") -> str:
    return f"https://api.github.com/repos/{repo.full_name}{suffix}"


def html_url(repo: Repository, suffix: str = "") -> str:
    return f"https://github.com/{repo.full_name}{suffix}"


def simple_user(repo: Repository, login: str) -> dict[str, Any]:
    uid = int(sha1(login.encode())[:6], 16)
    api = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": repo.node_id("U", uid),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": "User",
        "site_admin": False,
    }


def repository(repo: Repository, fork: str | None = None) -> dict[str, Any]:
    """``repo``'s repository object, or that of its fork ``fork`` (``owner/name``)."""
    full_name = fork or repo.full_name
    serial = int(sha1(fork.encode())[:6], 16) if fork else 0
    api, html = f"https://api.github.com/repos/{full_name}", f"https://github.com/{full_name}"
    out: dict[str, Any] = {key: api + suffix for key, suffix in _REPOSITORY_URL_TEMPLATES.items()}
    out.update(
        {
            "id": 81598961 + serial,
            "node_id": repo.node_id("R", serial),
            "name": full_name.split("/")[1],
            "full_name": full_name,
            "owner": simple_user(repo, full_name.split("/")[0]),
            "private": False,
            "html_url": html,
            "description": "",
            "fork": fork is not None,
            "url": api,
            "clone_url": html + ".git",
            "git_url": f"git://github.com/{full_name}.git",
            "ssh_url": f"git@github.com:{full_name}.git",
            "svn_url": html,
            "mirror_url": None,
            "homepage": None,
            "language": "Python",
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 1,
            "default_branch": repo.default_branch,
            "open_issues": 0,
            "open_issues_count": 0,
            "has_issues": True,
            "has_projects": True,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "archived": False,
            "disabled": False,
            "license": None,
            "pushed_at": iso(time.time()),
            "created_at": "2017-02-10T19:23:51Z",
            "updated_at": iso(time.time()),
        }
    )
    return out


def label(repo: Repository, name: str) -> dict[str, Any]:
    lid = repo.label_id(name)
    return {
        "id": lid,
        "node_id": repo.node_id("LA", lid),
        "url": api_url(repo, f"/labels/{name}"),
        "name": name,
        "description": "",
        "color": "ededed",
        "default": False,
    }


def issue_comment(repo: Repository, c: Comment) -> dict[str, Any]:
    return {
        "id": c.id,
        "node_id": repo.node_id("IC", c.id),
        "url": api_url(repo, f"/issues/comments/{c.id}"),
        "html_url": html_url(repo, f"/pull/{c.issue_number}#issuecomment-{c.id}"),
        "issue_url": api_url(repo, f"/issues/{c.issue_number}"),
        "body": c.body,
        "user": simple_user(repo, c.user),
        "created_at": c.created_at,
        "updated_at": c.created_at,
        "author_association": "NONE",
    }


def review(repo: Repository, r: Review) -> dict[str, Any]:
    pull_api = api_url(repo, f"/pulls/{r.pull_number}")
    html = html_url(repo, f"/pull/{r.pull_number}#pullrequestreview-{r.id}")
    return {
        "id": r.id,
        "node_id": repo.node_id("PRR", r.id),
        "user": simple_user(repo, r.user),
        "body": r.body,
        "state": r.state,
        "html_url": html,
        "pull_request_url": pull_api,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_api}},
        "submitted_at": r.submitted_at,
        "commit_id": r.commit_id,
        "author_association": "CONTRIBUTOR",
    }


def pull_request_simple(repo: Repository, pr: Pull) -> dict[str, Any]:
    n = pr.number
    api, html = api_url(repo, f"/pulls/{n}"), html_url(repo, f"/pull/{n}")

    def branch(ref: str, sha: str, fork: str | None = None) -> dict[str, Any]:
        owner = (fork or repo.full_name).split("/")[0]
        return {
            "label": f"{owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": simple_user(repo, owner),
            "repo": repository(repo, fork),
        }

    return {
        "url": api,
        "id": 10_000 + n,
        "node_id": pr.node_id,
        "html_url": html,
        "diff_url": html + ".diff",
        "patch_url": html + ".patch",
        "issue_url": api_url(repo, f"/issues/{n}"),
        "commits_url": api + "/commits",
        "review_comments_url": api + "/comments",
        "review_comment_url": api_url(repo, "/pulls/comments{/number}"),
        "comments_url": api_url(repo, f"/issues/{n}/comments"),
        "statuses_url": api_url(repo, f"/statuses/{pr.head_sha}"),
        "number": n,
        "state": pr.state,
        "locked": False,
        "title": pr.title,
        "user": simple_user(repo, pr.user),
        "body": pr.body,
        "labels": [label(repo, name) for name in pr.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": pr.created_at,
        "updated_at": pr.updated_at,
        "closed_at": pr.closed_at,
        "merged_at": pr.merged_at,
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": branch(pr.head_ref, pr.head_sha, pr.fork),
        "base": branch(pr.base_ref, pr.base_sha),
        "_links": _pull_links(repo, pr),
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": pr.draft,
    }


def issue_search_result_item(repo: Repository, pr: Pull) -> dict[str, Any]:
    """A pull request as ``GET /search/issues`` lists it (an issue with a ``pull_request``)."""
    n = pr.number
    issue = api_url(repo, f"/issues/{n}")
    html = html_url(repo, f"/pull/{n}")
    return {
        "url": issue,
        "repository_url": api_url(repo),
        "labels_url": issue + "/labels{/name}",
        "comments_url": issue + "/comments",
        "events_url": issue + "/events",
        "html_url": html,
        "id": 20_000 + n,
        "node_id": pr.node_id,
        "number": n,
        "title": pr.title,
        "user": simple_user(repo, pr.user),
        "labels": [label(repo, name) for name in pr.labels],
        "state": pr.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": len(repo.comments_on(n)),
        "created_at": pr.created_at,
        "updated_at": pr.updated_at,
        "closed_at": pr.closed_at,
        "author_association": "CONTRIBUTOR",
        "draft": pr.draft,
        "pull_request": {
            "url": api_url(repo, f"/pulls/{n}"),
            "html_url": html,
            "diff_url": html + ".diff",
            "patch_url": html + ".patch",
            "merged_at": pr.merged_at,
        },
        # GitHub's description types it a string: an empty body is "".
        "body": pr.body or "",
        "score": 1.0,
    }


def _pull_links(repo: Repository, pr: Pull) -> dict[str, dict[str, str]]:
    n = pr.number
    api = api_url(repo, f"/pulls/{n}")
    return {
        "self": {"href": api},
        "html": {"href": html_url(repo, f"/pull/{n}")},
        "issue": {"href": api_url(repo, f"/issues/{n}")},
        "comments": {"href": api_url(repo, f"/issues/{n}/comments")},
        "review_comments": {"href": api + "/comments"},
        "review_comment": {"href": api_url(repo, "/pulls/comments{/number}")},
        "commits": {"href": api + "/commits"},
        "statuses": {"href": api_url(repo, f"/statuses/{pr.head_sha}")},
    }


def pull_request(repo: Repository, pr: Pull) -> dict[str, Any]:
    files = pull_files(repo, pr)
    out = pull_request_simple(repo, pr)
    out.update(
        {
            "merged": pr.merged,
            "mergeable": None if pr.merged else True,
            "rebaseable": None,
            "mergeable_state": "unknown" if pr.merged else "clean",
            "merged_by": simple_user(repo, repo.owner) if pr.merged else None,
            "comments": len(repo.comments_on(pr.number)),
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
            "changed_files": len(files),
        }
    )
    out["user"] = simple_user(repo, pr.user)
    return out


def _git_person(c: Commit) -> dict[str, str]:
    return {"name": c.author, "email": f"{c.author}@example.com", "date": c.date}


def git_commit(repo: Repository, c: Commit) -> dict[str, Any]:
    person = _git_person(c)
    return {
        "sha": c.sha,
        "node_id": repo.node_id("C", int(c.sha[:8], 16)),
        "url": api_url(repo, f"/git/commits/{c.sha}"),
        "html_url": html_url(repo, f"/commit/{c.sha}"),
        "author": person,
        "committer": person,
        "message": c.message,
        "tree": {"sha": c.tree, "url": api_url(repo, f"/git/trees/{c.tree}")},
        "parents": [
            {
                "sha": p,
                "url": api_url(repo, f"/git/commits/{p}"),
                "html_url": html_url(repo, f"/commit/{p}"),
            }
            for p in c.parents
        ],
        "verification": {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        },
    }


def commit(repo: Repository, c: Commit) -> dict[str, Any]:
    person = _git_person(c)
    return {
        "url": api_url(repo, f"/commits/{c.sha}"),
        "sha": c.sha,
        "node_id": repo.node_id("C", int(c.sha[:8], 16)),
        "html_url": html_url(repo, f"/commit/{c.sha}"),
        "comments_url": api_url(repo, f"/commits/{c.sha}/comments"),
        "commit": {
            "url": api_url(repo, f"/git/commits/{c.sha}"),
            "author": person,
            "committer": person,
            "message": c.message,
            "comment_count": 0,
            "tree": {"sha": c.tree, "url": api_url(repo, f"/git/trees/{c.tree}")},
        },
        "author": simple_user(repo, c.author),
        "committer": simple_user(repo, c.author),
        "parents": [
            {
                "sha": p,
                "url": api_url(repo, f"/commits/{p}"),
                "html_url": html_url(repo, f"/commit/{p}"),
            }
            for p in c.parents
        ],
    }


def commit_with_files(repo: Repository, c: Commit) -> dict[str, Any]:
    """A commit as ``GET /repos/{owner}/{repo}/commits/{ref}`` gives it: with its files."""
    parent = repo.commits[c.parents[0]].tree if c.parents else repo.store_tree({})
    files = diff_entries(repo, parent, c.tree)
    adds = sum(f["additions"] for f in files)
    dels = sum(f["deletions"] for f in files)
    return {
        **commit(repo, c),
        "stats": {"additions": adds, "deletions": dels, "total": adds + dels},
        "files": files,
    }


def git_ref(repo: Repository, ref: str) -> dict[str, Any]:
    sha = repo.refs[ref]
    return {
        "ref": ref,
        "node_id": repo.node_id("REF", int(sha1(ref.encode())[:8], 16)),
        "url": api_url(repo, f"/git/{ref}"),
        "object": {"type": "commit", "sha": sha, "url": api_url(repo, f"/git/commits/{sha}")},
    }


def git_tree(repo: Repository, sha: str, recursive: bool) -> dict[str, Any]:
    entries = repo.trees[sha]
    dirs: set[str] = set()
    for path in entries:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    items: list[dict[str, Any]] = []
    for d in sorted(dirs):
        if recursive or "/" not in d:
            items.append(
                {"path": d, "mode": "040000", "type": "tree", "sha": sha1(f"{sha}:{d}".encode())}
            )
    for path, (mode, blob) in sorted(entries.items()):
        if recursive or "/" not in path:
            items.append(
                {
                    "path": path,
                    "mode": mode,
                    "type": "blob",
                    "sha": blob,
                    "size": len(repo.blobs[blob]),
                    "url": api_url(repo, f"/git/blobs/{blob}"),
                }
            )
    return {
        "sha": sha,
        "url": api_url(repo, f"/git/trees/{sha}"),
        "tree": items,
        "truncated": False,
    }


def diff_entries(repo: Repository, old_tree: str, new_tree: str) -> list[dict[str, Any]]:
    """The ``diff-entry`` of every file that differs between two trees, by path."""
    old, new = repo.trees[old_tree], repo.trees[new_tree]
    out = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        a = repo.blobs[before[1]].decode().splitlines() if before else []
        b = repo.blobs[after[1]].decode().splitlines() if after else []
        diff = list(difflib.ndiff(a, b))
        adds = sum(1 for line in diff if line.startswith("+ "))
        dels = sum(1 for line in diff if line.startswith("- "))
        status = "added" if before is None else "removed" if after is None else "modified"
        blob = (after or before)[1]  # type: ignore[index]
        # GitHub's patch: the unified diff's hunks, three lines of context, no file header.
        patch = "\n".join(list(difflib.unified_diff(a, b, lineterm="", n=3))[2:])
        out.append(
            {
                "patch": patch,
                "sha": blob,
                "filename": path,
                "status": status,
                "additions": adds,
                "deletions": dels,
                "changes": adds + dels,
                "blob_url": html_url(repo, f"/blob/{blob}/{path}"),
                "raw_url": html_url(repo, f"/raw/{blob}/{path}"),
                "contents_url": api_url(repo, f"/contents/{path}?ref={blob}"),
            }
        )
    return out


def pull_files(repo: Repository, pr: Pull) -> list[dict[str, Any]]:
    """The files a PR changes, as ``diff-entry`` objects."""
    base = repo.merge_base(pr.base_sha, pr.head_sha)
    return diff_entries(repo, repo.commits[base].tree, repo.commits[pr.head_sha].tree)
