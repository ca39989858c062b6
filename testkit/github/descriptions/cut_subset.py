"""Cut the REST operations this project calls out of GitHub's OpenAPI description.

Usage: ``python cut_subset.py api.github.com.json > rest-subset.openapi.json``
(the input is ``generated/api.github.com.json`` of the npm package
``@octokit/openapi``).  Keeps the operations listed in ``OPERATIONS`` and every
component they reference, transitively, so the output validates on its own.
To make the stand-in serve a new endpoint, add it here and re-run.
"""

from __future__ import annotations

import json
import sys
from typing import Any

OPERATIONS: dict[str, tuple[str, ...]] = {
    "/rate_limit": ("get",),
    "/repos/{owner}/{repo}": ("get",),
    "/repos/{owner}/{repo}/collaborators/{username}/permission": ("get",),
    "/repos/{owner}/{repo}/commits/{commit_sha}/pulls": ("get",),
    "/repos/{owner}/{repo}/commits/{ref}": ("get",),
    "/repos/{owner}/{repo}/compare/{basehead}": ("get",),
    "/repos/{owner}/{repo}/git/commits": ("post",),
    "/repos/{owner}/{repo}/git/commits/{commit_sha}": ("get",),
    "/repos/{owner}/{repo}/git/ref/{ref}": ("get",),
    "/repos/{owner}/{repo}/git/refs": ("post",),
    "/repos/{owner}/{repo}/git/refs/{ref}": ("delete", "patch"),
    "/repos/{owner}/{repo}/git/trees": ("post",),
    "/repos/{owner}/{repo}/git/trees/{tree_sha}": ("get",),
    "/repos/{owner}/{repo}/issues/comments/{comment_id}": ("patch",),
    "/repos/{owner}/{repo}/issues/{issue_number}/comments": ("get", "post"),
    "/repos/{owner}/{repo}/issues/{issue_number}/events": ("get",),
    "/repos/{owner}/{repo}/issues/{issue_number}/labels": ("get", "post"),
    "/repos/{owner}/{repo}/pulls": ("get", "post"),
    "/repos/{owner}/{repo}/pulls/{pull_number}": ("get", "patch"),
    "/repos/{owner}/{repo}/pulls/{pull_number}/commits": ("get",),
    "/repos/{owner}/{repo}/pulls/{pull_number}/files": ("get",),
    "/repos/{owner}/{repo}/pulls/{pull_number}/merge": ("put",),
    "/repos/{owner}/{repo}/pulls/{pull_number}/reviews": ("get", "post"),
    "/search/issues": ("get",),
    "/user": ("get",),
}


def _refs(node: Any) -> set[str]:
    """Every ``#/components/...`` reference inside ``node``."""
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node))
    return set()


def cut(full: dict[str, Any]) -> dict[str, Any]:
    paths = {
        path: {method: full["paths"][path][method] for method in methods}
        for path, methods in OPERATIONS.items()
    }
    components: dict[str, dict[str, Any]] = {}
    todo = sorted(_refs(paths))
    while todo:
        ref = todo.pop()
        _, _, kind, name = ref.split("/", 3)
        if name in components.setdefault(kind, {}):
            continue
        node = full["components"][kind][name]
        components[kind][name] = node
        todo.extend(sorted(_refs(node)))
    return {
        "openapi": full["openapi"],
        "info": full["info"],
        "servers": full["servers"],
        "paths": paths,
        "components": {kind: dict(sorted(items.items())) for kind, items in components.items()},
    }


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        json.dump(cut(json.load(fh)), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
