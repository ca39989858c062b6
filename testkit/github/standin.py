"""A stateful stand-in for GitHub, served over real HTTP on 127.0.0.1.

Theory of operation
-------------------
Tests (in-process with pytest-twisted, or a Buildbot master running as a
separate process) talk to this server exactly as they would talk to
``https://api.github.com``: real sockets, JSON bodies, ``Authorization:
Bearer`` tokens.  The server runs in its own thread (a stdlib
``ThreadingHTTPServer``) so it works whichever reactor the test runs.

It keeps the state a revert needs -- one repository with commits, trees,
blobs, refs, pull requests, issue comments and labels -- and it holds itself
to GitHub's published descriptions, vendored in ``testkit/github/descriptions/``:

* every REST response body is validated against the documented response
  schema of the operation (OpenAPI 3.0 ``nullable`` translated to JSON
  Schema), every JSON request body against the documented request schema;
* every GraphQL document is parsed and validated against ``schema.graphql``
  and executed against it, so the answer has the shape the schema says.

A violation is recorded, answered with a 500 so the client notices, and
raised again by :meth:`GitHubStandIn.check` (the fixture calls it at
teardown) so the test fails loudly even if the client swallowed the error.

Faults are queued per method and path (:meth:`GitHubStandIn.inject`): plain
5xx statuses, primary and secondary rate limits, a response delayed past the
client's timeout (the write still happens), a write whose response is lost
(connection closed after the write), and a corrupted body (to test the
validator itself).
"""

from __future__ import annotations

import base64
import copy
import difflib
import fnmatch
import hashlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import graphql
import jsonschema
from twisted.internet.interfaces import IDelayedCall

DEFAULT_TOKEN = "ghp_standinTOKEN0123456789abcdefSECRET"
BOT_LOGIN = "buildbot-revert-bot"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)
DOCS = "https://docs.github.com/rest"


# GitHub's published descriptions, vendored with their licences (see its README).
API_DESCRIPTIONS = Path(__file__).resolve().parent / "descriptions"


# --------------------------------------------------------------------------
# GitHub's descriptions, loaded once per process
# --------------------------------------------------------------------------


def _nullable_to_jsonschema(node: Any) -> Any:
    """Translate OpenAPI 3.0 schema dialect into JSON Schema (2020-12)."""
    if isinstance(node, list):
        return [_nullable_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: (value if key in ("example", "examples", "enum") else _nullable_to_jsonschema(value))
        for key, value in node.items()
        if key not in ("nullable", "discriminator", "xml", "externalDocs", "deprecated")
    }
    if node.get("nullable"):
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if isinstance(out.get("type"), str) and "$ref" not in out and "oneOf" not in out:
            out["type"] = [out["type"], "null"]
        else:
            return {"anyOf": [{"type": "null"}, out]}
    return out


@cache
def _openapi() -> dict[str, Any]:
    with open(API_DESCRIPTIONS / "rest-subset.openapi.json", encoding="utf-8") as f:
        return json.load(f)


@cache
def _converted_components() -> dict[str, Any]:
    components = _openapi()["components"]
    return {"schemas": _nullable_to_jsonschema(components["schemas"])}


@cache
def graphql_schema() -> graphql.GraphQLSchema:
    """GitHub's public GraphQL schema.

    ``assume_valid``: GitHub's own schema has a duplicated field and deprecated
    fields implementing non-deprecated interface fields, which graphql-core 3.3
    rejects as an invalid *schema*; documents are still validated against it.
    """
    sdl = (API_DESCRIPTIONS / "schema.graphql").read_text(encoding="utf-8")
    return graphql.build_schema(sdl, assume_valid_sdl=True, assume_valid=True)


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    spec: dict[str, Any]


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.escape(template)
    for name in re.findall(r"\{(\w+)\}", template):
        # Refs ("heads/main") and base...head pairs may contain slashes.
        part = r"(?P<%s>.+)" if name in ("ref", "basehead") else r"(?P<%s>[^/]+)"
        pattern = pattern.replace(re.escape("{" + name + "}"), part % name)
    return re.compile("^" + pattern + "$")


@cache
def _operations() -> tuple[Operation, ...]:
    ops = []
    for template, item in _openapi()["paths"].items():
        for method, spec in item.items():
            ops.append(Operation(method.upper(), template, _template_regex(template), spec))
    # Literal segments beat parameters: "/commits/{sha}/pulls" before "/commits/{ref}".
    ops.sort(key=lambda op: (-op.template.count("/"), op.template.count("{")))
    return tuple(ops)


def find_operation(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    for op in _operations():
        if op.method != method:
            continue
        match = op.regex.match(path)
        if match:
            return op, {k: unquote(v) for k, v in match.groupdict().items()}
    return None


_validators: dict[str, jsonschema.protocols.Validator] = {}


def _schema_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    key = json.dumps(schema, sort_keys=True)
    if key not in _validators:
        _validators[key] = _build_validator(schema)
    return _validators[key]


def _build_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    root = {"components": _converted_components(), "allOf": [_nullable_to_jsonschema(schema)]}
    return jsonschema.Draft202012Validator(root, format_checker=jsonschema.FormatChecker())


def _resolve(obj: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in obj:
        node: Any = _openapi()
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def _errors(validator: jsonschema.protocols.Validator, body: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
        for e in validator.iter_errors(body)
    ]


def validate_response(method: str, path: str, status: int, body: Any) -> list[str]:
    """Check a response against the operation's documented schema; return the problems.

    Statuses an operation does not document (injected faults, 401) must still
    carry GitHub's generic ``basic-error`` shape; an undocumented success
    status is itself a violation.
    """
    found = find_operation(method, path)
    if found is None:
        return [f"{method} {path}: not an operation of the REST description"]
    op, _ = found
    response = op.spec["responses"].get(str(status))
    if response is None:
        if status < 400:
            return [f"{method} {op.template}: status {status} is not documented"]
        schema: dict[str, Any] = {"$ref": "#/components/schemas/basic-error"}
    else:
        content = _resolve(response).get("content")
        if content is None:
            return [] if body is None else [f"{method} {op.template}: {status} has no body"]
        schema = content["application/json"]["schema"]
    return [
        f"{method} {op.template} {status}: {e}" for e in _errors(_schema_validator(schema), body)
    ]


def validate_request(method: str, path: str, body: Any) -> list[str]:
    """Check a JSON request body against the operation's documented request schema."""
    found = find_operation(method, path)
    if found is None or "requestBody" not in found[0].spec:
        return []
    op = found[0]
    schema = _resolve(op.spec["requestBody"])["content"]["application/json"]["schema"]
    errors = _errors(_schema_validator(schema), body)
    return [f"request {method} {op.template}: {e}" for e in errors]


def validate_graphql(document: str) -> tuple[graphql.DocumentNode | None, list[str]]:
    """Parse and validate a GraphQL document against GitHub's schema."""
    try:
        ast = graphql.parse(document)
    except graphql.GraphQLError as exc:
        return None, [f"graphql syntax: {exc.message}"]
    errors = graphql.validate(graphql_schema(), ast)
    return ast, [f"graphql: {e.message}" for e in errors]


# --------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------


@dataclass
class Fault:
    """One injected misbehaviour.  Build them with the class methods."""

    kind: str  # "status", "slow", "lost", "corrupt"
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    delay: float = 0.0
    mutate: Callable[[Any], Any] | None = None

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls("status", status, body={"message": "Server Error"})

    @classmethod
    def secondary_rate_limit(cls, retry_after: int | None = 1) -> Fault:
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        body = {"message": SECONDARY_RATE_LIMIT_MESSAGE, "documentation_url": DOCS}
        return cls("status", 403, headers=headers, body=body)

    @classmethod
    def primary_rate_limit(cls, reset_in: int = 2, status: int = 403) -> Fault:
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(time.time()) + reset_in),
        }
        body = {"message": "API rate limit exceeded for user.", "documentation_url": DOCS}
        return cls("status", status, headers=headers, body=body)

    @classmethod
    def slow(cls, delay: float) -> Fault:
        """Do the work, then answer only after ``delay`` real seconds."""
        return cls("slow", delay=delay)

    @classmethod
    def lost_response(cls) -> Fault:
        """Do the work, then drop the connection without answering."""
        return cls("lost")

    @classmethod
    def corrupt(cls, mutate: Callable[[Any], Any]) -> Fault:
        """Do the work, then mangle the body before validation (tests the validator)."""
        return cls("corrupt", mutate=mutate)


@dataclass
class _QueuedFault:
    method: str
    pattern: str
    fault: Fault
    remaining: int


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int
    fault: str | None


# --------------------------------------------------------------------------
# Repository state
# --------------------------------------------------------------------------


@dataclass
class Commit:
    sha: str
    tree: str
    parents: list[str]
    message: str
    author: str
    date: str


@dataclass
class Pull:
    number: int
    node_id: str
    title: str
    body: str | None
    user: str
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    draft: bool = False
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    merged_at: str | None = None


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created_at: str


class _GraphQLUserError(Exception):
    """An error GitHub itself would return (as opposed to a stand-in violation)."""


class StandInError(Exception):
    """A request the stand-in answers with an error status (GitHub's own errors)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


class GitHubStandIn:
    """The fake GitHub: state, HTTP server, validation and fault injection."""

    def __init__(
        self,
        owner: str = "python",
        name: str = "cpython",
        token: str = DEFAULT_TOKEN,
        default_branch: str = "main",
    ) -> None:
        self.owner, self.name, self.token = owner, name, token
        self.full_name = f"{owner}/{name}"
        self.default_branch = default_branch
        self.lock = threading.RLock()
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, tuple[str, str]]] = {}  # sha -> path -> (mode, blob)
        self.commits: dict[str, Commit] = {}
        self.refs: dict[str, str] = {}
        self.pulls: dict[int, Pull] = {}
        self.comments: list[Comment] = []
        self.label_catalog: dict[str, int] = {}
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.graphql_revert_error: str | None = None
        self.writes_in_flight = 0
        self.max_concurrent_writes = 0
        self._faults: list[_QueuedFault] = []
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1000)
        self._clock = itertools.count(int(time.time()) - 86400 * 30, 60)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        root_tree = self._store_tree({"README.rst": ("100644", self._store_blob(b"readme\n"))})
        root = self._store_commit(root_tree, [], "Initial commit", "guido")
        self.refs[f"refs/heads/{default_branch}"] = root

    # ------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        assert self._server is not None, "stand-in not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GitHubStandIn:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll
            name="github-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> GitHubStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check(self) -> None:
        """Fail loudly if anything the stand-in saw or sent broke GitHub's contract."""
        if self.violations:
            raise AssertionError(
                "GitHub stand-in contract violations:\n" + "\n".join(self.violations)
            )

    # ------------------------------------------------------------ seeding

    def _store_blob(self, content: bytes) -> str:
        sha = _sha1(b"blob %d\0" % len(content) + content)
        self.blobs[sha] = content
        return sha

    def _store_tree(self, entries: dict[str, tuple[str, str]]) -> str:
        sha = _sha1(b"tree\0" + json.dumps(sorted(entries.items())).encode())
        self.trees[sha] = dict(entries)
        return sha

    def _store_commit(self, tree: str, parents: list[str], message: str, author: str) -> str:
        date = _iso(next(self._clock))
        payload = json.dumps([tree, parents, message, author, date, next(self._ids)])
        sha = _sha1(b"commit\0" + payload.encode())
        self.commits[sha] = Commit(sha, tree, list(parents), message, author, date)
        return sha

    def _apply(self, tree_sha: str, files: dict[str, str | None]) -> str:
        entries = dict(self.trees[tree_sha])
        for path, content in files.items():
            if content is None:
                entries.pop(path, None)
            else:
                entries[path] = ("100644", self._store_blob(content.encode()))
        return self._store_tree(entries)

    def head(self, branch: str | None = None) -> str:
        return self.refs[f"refs/heads/{branch or self.default_branch}"]

    def push_commit(
        self,
        message: str,
        files: dict[str, str | None],
        author: str = "someone",
        branch: str | None = None,
    ) -> str:
        """Commit directly on a branch (default: the default branch); return the sha."""
        with self.lock:
            parent = self.head(branch)
            tree = self._apply(self.commits[parent].tree, files)
            sha = self._store_commit(tree, [parent], message, author)
            self.refs[f"refs/heads/{branch or self.default_branch}"] = sha
            return sha

    def add_merged_pr(
        self,
        title: str,
        author_login: str,
        files: dict[str, str | None],
        body: str = "",
        labels: tuple[str, ...] = (),
        head_ref: str | None = None,
    ) -> tuple[int, str]:
        """Open a PR and squash-merge it onto the default branch, CPython style.

        The merge commit's title is ``"<title> (#<n>)"``.  Returns
        ``(pr_number, merge_sha)``.
        """
        with self.lock:
            number = self.add_open_pr(title, author_login, files, body, head_ref=head_ref)
            pull = self.pulls[number]
            message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
            tree = self.commits[pull.head_sha].tree
            merge_sha = self._store_commit(tree, [pull.base_sha], message, author_login)
            self.refs[f"refs/heads/{self.default_branch}"] = merge_sha
            pull.state = "closed"
            pull.merged = True
            pull.merge_commit_sha = merge_sha
            pull.labels = list(labels)
            pull.updated_at = pull.closed_at = pull.merged_at = _iso(next(self._clock))
            for label in labels:
                self._label_id(label)
            return number, merge_sha

    def add_open_pr(
        self,
        title: str,
        author_login: str,
        files: dict[str, str | None],
        body: str = "",
        head_ref: str | None = None,
    ) -> int:
        """Open (not merge) a PR from a new branch; return its number."""
        with self.lock:
            number = next(self._numbers)
            base_sha = self.head()
            tree = self._apply(self.commits[base_sha].tree, files)
            head_sha = self._store_commit(tree, [base_sha], title, author_login)
            head_ref = head_ref or f"{author_login}/pr-{number}"
            self.refs[f"refs/heads/{head_ref}"] = head_sha
            now = _iso(next(self._clock))
            self.pulls[number] = Pull(
                number,
                self._node_id("PR", number),
                title,
                body or None,
                author_login,
                head_ref,
                head_sha,
                self.default_branch,
                base_sha,
                created_at=now,
                updated_at=now,
            )
            return number

    def close_pull(self, number: int) -> None:
        """Close a PR without merging it, as a human would."""
        with self.lock:
            pull = self.pulls[number]
            pull.state = "closed"
            pull.closed_at = pull.updated_at = _iso(next(self._clock))

    def inject(self, method: str, path: str, fault: Fault, times: int = 1) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``.

        ``path`` is an fnmatch pattern over the request path without the query,
        e.g. ``"/repos/*/pulls"`` or ``"/graphql"``.
        """
        with self.lock:
            self._faults.append(_QueuedFault(method.upper(), path, fault, times))

    # ------------------------------------------------------------ inspection

    def revert_pulls(self) -> list[Pull]:
        """The PRs that are not merged originals, i.e. what a client filed."""
        with self.lock:
            return [p for p in self.pulls.values() if not p.merged]

    def comments_on(self, number: int) -> list[Comment]:
        with self.lock:
            return [c for c in self.comments if c.issue_number == number]

    def requests_to(self, method: str, pattern: str) -> list[RecordedRequest]:
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method == method.upper() and fnmatch.fnmatchcase(r.path, pattern)
            ]

    def file_at(self, ref_or_sha: str, path: str) -> str | None:
        with self.lock:
            sha = self._resolve_commitish(ref_or_sha)
            entry = self.trees[self.commits[sha].tree].get(path)
            return None if entry is None else self.blobs[entry[1]].decode()

    # ------------------------------------------------------------ HTTP plumbing

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for queued in self._faults:
                if queued.method == method and fnmatch.fnmatchcase(path, queued.pattern):
                    queued.remaining -= 1
                    if queued.remaining <= 0:
                        self._faults.remove(queued)
                    return queued.fault
        return None

    def _authorised(self, header: str | None) -> bool:
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        return scheme.lower() in ("bearer", "token") and value == self.token

    def handle(self, handler: _Handler) -> None:
        write = handler.command != "GET"
        if write:
            with self.lock:
                self.writes_in_flight += 1
                self.max_concurrent_writes = max(self.max_concurrent_writes, self.writes_in_flight)
        try:
            self._handle(handler)
        finally:
            if write:
                with self.lock:
                    self.writes_in_flight -= 1

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        path, query = url.path, parse_qs(url.query)
        method = handler.command
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
            self._violate(f"{method} {path}: request body is not JSON")
        fault = self._take_fault(method, path)
        headers: dict[str, str] = {}
        if not self._authorised(handler.headers.get("Authorization")):
            status, payload = 401, {"message": "Bad credentials", "documentation_url": DOCS}
        elif fault is not None and fault.kind == "status":
            status, payload, headers = fault.status, fault.body, dict(fault.headers)
        else:
            status, payload = self._dispatch(method, path, query, body)
        if fault is not None and fault.kind == "corrupt" and fault.mutate is not None:
            payload = fault.mutate(copy.deepcopy(payload))
        if path != "/graphql":
            problems = validate_response(method, path, status, payload)
            if problems:
                self._violate(*problems)
                status, payload = 500, {"message": "stand-in: response violates GitHub's schema"}
        text = json.dumps(payload)
        if self.token in text:
            self._violate(f"{method} {path}: response body contains the token")
            status, text = 500, json.dumps({"message": "stand-in: token in response"})
        with self.lock:
            self.requests.append(
                RecordedRequest(method, path, query, body, status, fault.kind if fault else None)
            )
        if fault is not None and fault.kind == "lost":
            handler.drop()
            return
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.delay)
        handler.reply(status, text, {**self._rate_headers(), **headers})

    def _rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "4999",
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": "1",
            "x-ratelimit-resource": "core",
            "x-github-request-id": f"STANDIN:{next(self._ids)}",
        }

    def _violate(self, *problems: str) -> None:
        with self.lock:
            self.violations.extend(problems)

    def _dispatch(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if path == "/graphql" and method == "POST":
            return self._graphql(body)
        found = find_operation(method, path)
        if found is None:
            return 404, {"message": "Not Found", "documentation_url": DOCS}
        op, params = found
        if params.get("owner") is not None and (
            f"{params['owner']}/{params['repo']}" != self.full_name
        ):
            return 404, {"message": "Not Found", "documentation_url": DOCS}
        problems = validate_request(method, path, body) if body is not None else []
        if problems:
            self._violate(*problems)
            return 422, {"message": "Validation Failed", "documentation_url": DOCS}
        route = _ROUTES.get((method, op.template))
        if route is None:
            self._violate(f"{method} {op.template}: documented but not implemented by the stand-in")
            return 404, {"message": "Not Found", "documentation_url": DOCS}
        try:
            with self.lock:
                return route(self, params, query, body)
        except StandInError as exc:
            if exc.status == 422:
                return 422, {"message": str(exc), "documentation_url": DOCS, "errors": []}
            return exc.status, {"message": str(exc), "documentation_url": DOCS}

    # ------------------------------------------------------------ shapes

    def _node_id(self, kind: str, number: int) -> str:
        return f"{kind}_kw" + base64.b64encode(f"{self.full_name}:{number}".encode()).decode()

    def _api(self, suffix: str = "") -> str:
        return f"https://api.github.com/repos/{self.full_name}{suffix}"

    def _html(self, suffix: str = "") -> str:
        return f"https://github.com/{self.full_name}{suffix}"

    def _user(self, login: str) -> dict[str, Any]:
        uid = int(_sha1(login.encode())[:6], 16)
        api = f"https://api.github.com/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": self._node_id("U", uid),
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

    def _repository(self) -> dict[str, Any]:
        api = self._api()
        templated = {
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
        repo: dict[str, Any] = {key: api + suffix for key, suffix in templated.items()}
        repo.update(
            {
                "id": 81598961,
                "node_id": self._node_id("R", 0),
                "name": self.name,
                "full_name": self.full_name,
                "owner": self._user(self.owner),
                "private": False,
                "html_url": self._html(),
                "description": "",
                "fork": False,
                "url": api,
                "clone_url": self._html(".git"),
                "git_url": f"git://github.com/{self.full_name}.git",
                "ssh_url": f"git@github.com:{self.full_name}.git",
                "svn_url": self._html(),
                "mirror_url": None,
                "homepage": None,
                "language": "Python",
                "forks": 0,
                "forks_count": 0,
                "stargazers_count": 0,
                "watchers_count": 0,
                "watchers": 0,
                "size": 1,
                "default_branch": self.default_branch,
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
                "pushed_at": _iso(time.time()),
                "created_at": "2017-02-10T19:23:51Z",
                "updated_at": _iso(time.time()),
            }
        )
        return repo

    def _label(self, name: str) -> dict[str, Any]:
        lid = self._label_id(name)
        return {
            "id": lid,
            "node_id": self._node_id("LA", lid),
            "url": self._api(f"/labels/{name}"),
            "name": name,
            "description": "",
            "color": "ededed",
            "default": False,
        }

    def _label_id(self, name: str) -> int:
        if name not in self.label_catalog:
            self.label_catalog[name] = next(self._ids)
        return self.label_catalog[name]

    def _pull_simple(self, pr: Pull) -> dict[str, Any]:
        n = pr.number
        api, html = self._api(f"/pulls/{n}"), self._html(f"/pull/{n}")
        repo = self._repository()

        def branch(ref: str, sha: str) -> dict[str, Any]:
            return {
                "label": f"{self.owner}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": self._user(self.owner),
                "repo": repo,
            }

        return {
            "url": api,
            "id": 10_000 + n,
            "node_id": pr.node_id,
            "html_url": html,
            "diff_url": html + ".diff",
            "patch_url": html + ".patch",
            "issue_url": self._api(f"/issues/{n}"),
            "commits_url": api + "/commits",
            "review_comments_url": api + "/comments",
            "review_comment_url": self._api("/pulls/comments{/number}"),
            "comments_url": self._api(f"/issues/{n}/comments"),
            "statuses_url": self._api(f"/statuses/{pr.head_sha}"),
            "number": n,
            "state": pr.state,
            "locked": False,
            "title": pr.title,
            "user": self._user(pr.user),
            "body": pr.body,
            "labels": [self._label(name) for name in pr.labels],
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
            "head": branch(pr.head_ref, pr.head_sha),
            "base": branch(pr.base_ref, pr.base_sha),
            "_links": {
                "self": {"href": api},
                "html": {"href": html},
                "issue": {"href": self._api(f"/issues/{n}")},
                "comments": {"href": self._api(f"/issues/{n}/comments")},
                "review_comments": {"href": api + "/comments"},
                "review_comment": {"href": self._api("/pulls/comments{/number}")},
                "commits": {"href": api + "/commits"},
                "statuses": {"href": self._api(f"/statuses/{pr.head_sha}")},
            },
            "author_association": "CONTRIBUTOR",
            "auto_merge": None,
            "draft": pr.draft,
        }

    def _pull_full(self, pr: Pull) -> dict[str, Any]:
        files = self._pull_diff(pr)
        out = self._pull_simple(pr)
        out.update(
            {
                "merged": pr.merged,
                "mergeable": None if pr.merged else True,
                "rebaseable": None,
                "mergeable_state": "unknown" if pr.merged else "clean",
                "merged_by": self._user(self.owner) if pr.merged else None,
                "comments": len(self.comments_on(pr.number)),
                "review_comments": 0,
                "maintainer_can_modify": False,
                "commits": 1,
                "additions": sum(f["additions"] for f in files),
                "deletions": sum(f["deletions"] for f in files),
                "changed_files": len(files),
            }
        )
        out["user"] = self._user(pr.user)
        return out

    def _git_commit(self, c: Commit) -> dict[str, Any]:
        person = {"name": c.author, "email": f"{c.author}@example.com", "date": c.date}
        return {
            "sha": c.sha,
            "node_id": self._node_id("C", int(c.sha[:8], 16)),
            "url": self._api(f"/git/commits/{c.sha}"),
            "html_url": self._html(f"/commit/{c.sha}"),
            "author": person,
            "committer": person,
            "message": c.message,
            "tree": {"sha": c.tree, "url": self._api(f"/git/trees/{c.tree}")},
            "parents": [
                {
                    "sha": p,
                    "url": self._api(f"/git/commits/{p}"),
                    "html_url": self._html(f"/commit/{p}"),
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

    def _commit(self, c: Commit) -> dict[str, Any]:
        person = {"name": c.author, "email": f"{c.author}@example.com", "date": c.date}
        return {
            "url": self._api(f"/commits/{c.sha}"),
            "sha": c.sha,
            "node_id": self._node_id("C", int(c.sha[:8], 16)),
            "html_url": self._html(f"/commit/{c.sha}"),
            "comments_url": self._api(f"/commits/{c.sha}/comments"),
            "commit": {
                "url": self._api(f"/git/commits/{c.sha}"),
                "author": person,
                "committer": person,
                "message": c.message,
                "comment_count": 0,
                "tree": {"sha": c.tree, "url": self._api(f"/git/trees/{c.tree}")},
            },
            "author": self._user(c.author),
            "committer": self._user(c.author),
            "parents": [
                {
                    "sha": p,
                    "url": self._api(f"/commits/{p}"),
                    "html_url": self._html(f"/commit/{p}"),
                }
                for p in c.parents
            ],
        }

    def _git_ref(self, ref: str) -> dict[str, Any]:
        sha = self.refs[ref]
        return {
            "ref": ref,
            "node_id": self._node_id("REF", int(_sha1(ref.encode())[:8], 16)),
            "url": self._api(f"/git/{ref}"),
            "object": {"type": "commit", "sha": sha, "url": self._api(f"/git/commits/{sha}")},
        }

    def _git_tree(self, sha: str, recursive: bool) -> dict[str, Any]:
        entries = self.trees[sha]
        dirs: set[str] = set()
        for path in entries:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        items = []
        for d in sorted(dirs):
            if recursive or "/" not in d:
                items.append(
                    {
                        "path": d,
                        "mode": "040000",
                        "type": "tree",
                        "sha": _sha1(f"{sha}:{d}".encode()),
                    }
                )
        for path, (mode, blob) in sorted(entries.items()):
            if recursive or "/" not in path:
                items.append(
                    {
                        "path": path,
                        "mode": mode,
                        "type": "blob",
                        "sha": blob,
                        "size": len(self.blobs[blob]),
                        "url": self._api(f"/git/blobs/{blob}"),
                    }
                )
        return {
            "sha": sha,
            "url": self._api(f"/git/trees/{sha}"),
            "tree": items,
            "truncated": False,
        }

    # ------------------------------------------------------------ git helpers

    def _resolve_commitish(self, name: str) -> str:
        for ref in (name, f"refs/heads/{name}", f"refs/{name}"):
            if ref in self.refs:
                return self.refs[ref]
        if name in self.commits:
            return name
        matches = [s for s in self.commits if len(name) >= 7 and s.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        raise StandInError(404, "Not Found")

    def _ancestors(self, sha: str) -> set[str]:
        seen, todo = set(), [sha]
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo.extend(self.commits[s].parents)
        return seen

    def _generation(self, sha: str) -> int:
        return len(self._ancestors(sha))

    def _merge_base(self, a: str, b: str) -> str:
        common = self._ancestors(a) & self._ancestors(b)
        if not common:
            raise StandInError(404, "No common ancestor between the base and head")
        return max(common, key=self._generation)

    def _diff(self, old_tree: str, new_tree: str) -> list[dict[str, Any]]:
        old, new = self.trees[old_tree], self.trees[new_tree]
        out = []
        for path in sorted(set(old) | set(new)):
            before, after = old.get(path), new.get(path)
            if before == after:
                continue
            a = self.blobs[before[1]].decode().splitlines() if before else []
            b = self.blobs[after[1]].decode().splitlines() if after else []
            diff = list(difflib.ndiff(a, b))
            adds = sum(1 for line in diff if line.startswith("+ "))
            dels = sum(1 for line in diff if line.startswith("- "))
            status = "added" if before is None else "removed" if after is None else "modified"
            blob = (after or before)[1]  # type: ignore[index]
            out.append(
                {
                    "sha": blob,
                    "filename": path,
                    "status": status,
                    "additions": adds,
                    "deletions": dels,
                    "changes": adds + dels,
                    "blob_url": self._html(f"/blob/{blob}/{path}"),
                    "raw_url": self._html(f"/raw/{blob}/{path}"),
                    "contents_url": self._api(f"/contents/{path}?ref={blob}"),
                }
            )
        return out

    def _pull_diff(self, pr: Pull) -> list[dict[str, Any]]:
        base = self._merge_base(pr.base_sha, pr.head_sha)
        return self._diff(self.commits[base].tree, self.commits[pr.head_sha].tree)

    def _new_pull(
        self, title: str, body: str | None, head_ref: str, base_ref: str, draft: bool
    ) -> Pull:
        number = next(self._numbers)
        now = _iso(next(self._clock))
        pull = Pull(
            number,
            self._node_id("PR", number),
            title,
            body,
            BOT_LOGIN,
            head_ref,
            self.refs[f"refs/heads/{head_ref}"],
            base_ref,
            self.refs[f"refs/heads/{base_ref}"],
            draft=draft,
            created_at=now,
            updated_at=now,
        )
        self.pulls[number] = pull
        return pull

    # ------------------------------------------------------------ GraphQL

    def _graphql(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            self._violate("graphql: request body has no query")
            return 400, {"message": "Problems parsing JSON"}
        ast, problems = validate_graphql(body["query"])
        if problems or ast is None:
            self._violate(*problems)
            return 200, {"errors": [{"message": p} for p in problems]}
        with self.lock:
            result = graphql.execute(
                graphql_schema(),
                ast,
                root_value=self._graphql_root(),
                variable_values=body.get("variables"),
                operation_name=body.get("operationName"),
            )
        assert not isinstance(result, Iterator)
        out: dict[str, Any] = {"data": result.data}
        if result.errors:
            out["errors"] = []
            for error in result.errors:
                original = error.original_error
                if not isinstance(original, _GraphQLUserError):
                    self._violate(f"graphql execution: {error.message}")
                entry = {
                    "message": error.message,
                    "path": error.path,
                    "type": "UNPROCESSABLE" if original else "INTERNAL",
                }
                out["errors"].append(entry)
        return 200, out

    def _graphql_root(self) -> dict[str, Any]:
        def repository(info: Any, owner: str, name: str, **_: Any) -> dict[str, Any] | None:
            if f"{owner}/{name}" != self.full_name:
                return None
            return {
                "__typename": "Repository",
                "id": self._node_id("R", 0),
                "name": self.name,
                "nameWithOwner": self.full_name,
                "pullRequest": lambda info, number: (
                    self._gql_pull(self.pulls[number]) if number in self.pulls else None
                ),
            }

        return {
            "repository": repository,
            "revertPullRequest": self._gql_revert,
            "node": lambda info, id: self._gql_node(id),
        }

    def _gql_node(self, node_id: str) -> dict[str, Any] | None:
        for pull in self.pulls.values():
            if pull.node_id == node_id:
                return self._gql_pull(pull)
        return None

    def _gql_pull(self, pr: Pull) -> dict[str, Any]:
        merge = self.commits.get(pr.merge_commit_sha or "")
        return {
            "__typename": "PullRequest",
            "id": pr.node_id,
            "number": pr.number,
            "title": pr.title,
            "body": pr.body or "",
            "url": self._html(f"/pull/{pr.number}"),
            "permalink": self._html(f"/pull/{pr.number}"),
            "state": "MERGED" if pr.merged else pr.state.upper(),
            "merged": pr.merged,
            "closed": pr.state == "closed",
            "isDraft": pr.draft,
            "headRefName": pr.head_ref,
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

    def _gql_revert(self, info: Any, input: dict[str, Any]) -> dict[str, Any]:
        if self.graphql_revert_error:
            raise _GraphQLUserError(self.graphql_revert_error)
        pull = next((p for p in self.pulls.values() if p.node_id == input["pullRequestId"]), None)
        if pull is None:
            raise _GraphQLUserError(
                f"Could not resolve to a node with the global id of '{input['pullRequestId']}'"
            )
        if not pull.merged or pull.merge_commit_sha is None:
            raise _GraphQLUserError("Pull request is not merged and cannot be reverted")
        tree = self._revert_tree(pull.merge_commit_sha, self.head(pull.base_ref))
        if tree is None:
            raise _GraphQLUserError("This pull request could not be reverted automatically")
        title = input.get("title") or f'Revert "{pull.title}"'
        message = f"{title}\n\nThis reverts commit {pull.merge_commit_sha}."
        sha = self._store_commit(tree, [self.head(pull.base_ref)], message, BOT_LOGIN)
        branch = f"revert-{pull.number}-{pull.head_ref}"
        for suffix in itertools.count(1):
            if f"refs/heads/{branch}" not in self.refs:
                break
            branch = f"revert-{pull.number}-{pull.head_ref}-{suffix}"
        self.refs[f"refs/heads/{branch}"] = sha
        body = input.get("body") or f"Reverts {self.full_name}#{pull.number}"
        new = self._new_pull(title, body, branch, pull.base_ref, bool(input.get("draft")))
        return {
            "clientMutationId": input.get("clientMutationId"),
            "pullRequest": self._gql_pull(pull),
            "revertPullRequest": self._gql_pull(new),
        }

    def _revert_tree(self, merge_sha: str, onto: str) -> str | None:
        """The tree of ``onto`` with ``merge_sha`` undone, or None on conflict."""
        merge = self.commits[merge_sha]
        parent = self.commits[merge.parents[0]]
        before, after = self.trees[parent.tree], self.trees[merge.tree]
        current = dict(self.trees[self.commits[onto].tree])
        for path in set(before) | set(after):
            if before.get(path) == after.get(path):
                continue
            if current.get(path) != after.get(path):
                return None
            if path in before:
                current[path] = before[path]
            else:
                current.pop(path, None)
        return self._store_tree(current)


# --------------------------------------------------------------------------
# REST routes: (method, OpenAPI template) -> handler(standin, params, query, body)
# --------------------------------------------------------------------------

R = "/repos/{owner}/{repo}"
Route = Callable[[GitHubStandIn, dict[str, str], dict[str, list[str]], Any], tuple[int, Any]]
_ROUTES: dict[tuple[str, str], Route] = {}


def _route(method: str, template: str) -> Callable[[Route], Route]:
    def register(fn: Route) -> Route:
        _ROUTES[(method, template)] = fn
        return fn

    return register


def _q(query: dict[str, list[str]], name: str, default: str = "") -> str:
    return query.get(name, [default])[0]


def _page(items: list[Any], query: dict[str, list[str]]) -> list[Any]:
    per_page = min(int(_q(query, "per_page", "30")), 100)
    page = max(int(_q(query, "page", "1")), 1)
    return items[(page - 1) * per_page : page * per_page]


def _pull_or_404(s: GitHubStandIn, number: str) -> Pull:
    pull = s.pulls.get(int(number))
    if pull is None:
        raise StandInError(404, "Not Found")
    return pull


@_route("GET", "/rate_limit")
def _rate_limit(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    reset = int(time.time()) + 3600
    core = {"limit": 5000, "remaining": 4999, "reset": reset, "used": 1}
    search = {"limit": 30, "remaining": 30, "reset": reset, "used": 0}
    graph = {"limit": 5000, "remaining": 5000, "reset": reset, "used": 0}
    return 200, {"rate": core, "resources": {"core": core, "search": search, "graphql": graph}}


@_route("GET", R + "/commits/{commit_sha}/pulls")
def _commit_pulls(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    sha = s._resolve_commitish(p["commit_sha"])
    found = [
        pr
        for pr in s.pulls.values()
        if pr.merge_commit_sha == sha
        or sha in s._ancestors(pr.head_sha) - s._ancestors(pr.base_sha)
    ]
    return 200, [s._pull_simple(pr) for pr in _page(found, q)]


@_route("GET", R + "/pulls")
def _list_pulls(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    state = _q(q, "state", "open")
    pulls = [pr for pr in s.pulls.values() if state == "all" or pr.state == state]
    if "head" in q:
        owner, _, ref = _q(q, "head").partition(":")
        pulls = [pr for pr in pulls if owner == s.owner and pr.head_ref == ref]
    if "base" in q:
        pulls = [pr for pr in pulls if pr.base_ref == _q(q, "base")]
    key = {"created": "created_at", "updated": "updated_at"}.get(_q(q, "sort", "created"))
    pulls.sort(key=lambda pr: (getattr(pr, key or "created_at"), pr.number))
    if _q(q, "direction", "desc") == "desc":
        pulls.reverse()
    return 200, [s._pull_simple(pr) for pr in _page(pulls, q)]


@_route("POST", R + "/pulls")
def _create_pull(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    head = b["head"].split(":")[-1]
    base = b["base"]
    if f"refs/heads/{head}" not in s.refs or f"refs/heads/{base}" not in s.refs:
        raise StandInError(422, "Validation Failed: head or base does not exist")
    for pr in s.pulls.values():
        if pr.state == "open" and pr.head_ref == head and pr.base_ref == base:
            raise StandInError(422, f"A pull request already exists for {s.owner}:{head}.")
    pull = s._new_pull(b.get("title", ""), b.get("body"), head, base, bool(b.get("draft")))
    return 201, s._pull_full(pull)


@_route("GET", R + "/pulls/{pull_number}")
def _get_pull(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    return 200, s._pull_full(_pull_or_404(s, p["pull_number"]))


@_route("PATCH", R + "/pulls/{pull_number}")
def _update_pull(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    pull = _pull_or_404(s, p["pull_number"])
    for key in ("title", "body"):
        if key in b:
            setattr(pull, key, b[key])
    if b.get("state") in ("open", "closed") and not pull.merged:
        pull.state = b["state"]
        pull.closed_at = _iso(time.time()) if pull.state == "closed" else None
    pull.updated_at = _iso(next(s._clock))
    return 200, s._pull_full(pull)


@_route("GET", R + "/pulls/{pull_number}/files")
def _pull_files(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    return 200, _page(s._pull_diff(_pull_or_404(s, p["pull_number"])), q)


def _comment_json(s: GitHubStandIn, c: Comment) -> dict[str, Any]:
    return {
        "id": c.id,
        "node_id": s._node_id("IC", c.id),
        "url": s._api(f"/issues/comments/{c.id}"),
        "html_url": s._html(f"/pull/{c.issue_number}#issuecomment-{c.id}"),
        "issue_url": s._api(f"/issues/{c.issue_number}"),
        "body": c.body,
        "user": s._user(c.user),
        "created_at": c.created_at,
        "updated_at": c.created_at,
        "author_association": "NONE",
    }


@_route("GET", R + "/issues/{issue_number}/comments")
def _list_comments(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    _pull_or_404(s, p["issue_number"])
    comments = s.comments_on(int(p["issue_number"]))
    return 200, [_comment_json(s, c) for c in _page(comments, q)]


@_route("POST", R + "/issues/{issue_number}/comments")
def _create_comment(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    _pull_or_404(s, p["issue_number"])
    c = Comment(next(s._ids), int(p["issue_number"]), b["body"], BOT_LOGIN, _iso(next(s._clock)))
    s.comments.append(c)
    return 201, _comment_json(s, c)


@_route("POST", R + "/issues/{issue_number}/labels")
def _add_labels(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    pull = _pull_or_404(s, p["issue_number"])
    names = b["labels"] if isinstance(b, dict) else b
    names = [n if isinstance(n, str) else n["name"] for n in names]
    for name in names:
        if name not in pull.labels:
            pull.labels.append(name)
    return 200, [s._label(name) for name in pull.labels]


@_route("GET", R + "/issues/{issue_number}/labels")
def _get_labels(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    return 200, [s._label(name) for name in _pull_or_404(s, p["issue_number"]).labels]


@_route("GET", R + "/git/commits/{commit_sha}")
def _get_git_commit(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    commit = s.commits.get(p["commit_sha"])
    if commit is None:
        raise StandInError(404, "Not Found")
    return 200, s._git_commit(commit)


@_route("POST", R + "/git/commits")
def _create_git_commit(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    if b["tree"] not in s.trees or any(parent not in s.commits for parent in b.get("parents", [])):
        raise StandInError(422, "Tree SHA or parent SHA does not exist")
    sha = s._store_commit(b["tree"], list(b.get("parents", [])), b["message"], BOT_LOGIN)
    return 201, s._git_commit(s.commits[sha])


@_route("GET", R + "/git/trees/{tree_sha}")
def _get_tree(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    if p["tree_sha"] not in s.trees:
        raise StandInError(404, "Not Found")
    recursive = _q(q, "recursive") not in ("", "0", "false")
    return 200, s._git_tree(p["tree_sha"], recursive)


@_route("POST", R + "/git/trees")
def _create_tree(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    base = b.get("base_tree")
    if base is not None and base not in s.trees:
        raise StandInError(422, "base_tree does not exist")
    entries = dict(s.trees[base]) if base else {}
    for item in b["tree"]:
        if "content" in item:
            entries[item["path"]] = (item["mode"], s._store_blob(item["content"].encode()))
        elif item.get("sha") is None:
            entries.pop(item["path"], None)
        elif item["sha"] in s.blobs:
            entries[item["path"]] = (item["mode"], item["sha"])
        else:
            raise StandInError(422, f"sha {item['sha']} is not a blob")
    return 201, s._git_tree(s._store_tree(entries), recursive=True)


@_route("GET", R + "/git/ref/{ref}")
def _get_ref(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    ref = "refs/" + p["ref"]
    if ref not in s.refs:
        raise StandInError(404, "Not Found")
    return 200, s._git_ref(ref)


@_route("POST", R + "/git/refs")
def _create_ref(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    ref = b["ref"]
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise StandInError(422, f"{ref} is not a valid ref name.")
    if ref in s.refs:
        raise StandInError(422, "Reference already exists")
    if b["sha"] not in s.commits:
        raise StandInError(422, "Object does not exist")
    s.refs[ref] = b["sha"]
    return 201, s._git_ref(ref)


@_route("GET", R + "/compare/{basehead}")
def _compare(s: GitHubStandIn, p: dict[str, str], q: dict[str, list[str]], b: Any) -> Any:
    base_name, sep, head_name = p["basehead"].partition("...")
    if not sep:
        raise StandInError(404, "Not Found")
    base, head = s._resolve_commitish(base_name), s._resolve_commitish(head_name)
    merge_base = s._merge_base(base, head)
    ahead = s._ancestors(head) - s._ancestors(base)
    behind = s._ancestors(base) - s._ancestors(head)
    status = (
        "identical"
        if not ahead and not behind
        else "ahead"
        if not behind
        else "behind"
        if not ahead
        else "diverged"
    )
    commits = sorted(ahead, key=s._generation)
    html = s._html(f"/compare/{p['basehead']}")
    return 200, {
        "url": s._api(f"/compare/{p['basehead']}"),
        "html_url": html,
        "permalink_url": s._html(f"/compare/{s.owner}:{base}...{s.owner}:{head}"),
        "diff_url": html + ".diff",
        "patch_url": html + ".patch",
        "base_commit": s._commit(s.commits[base]),
        "merge_base_commit": s._commit(s.commits[merge_base]),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [s._commit(s.commits[c]) for c in commits],
        "files": s._diff(s.commits[merge_base].tree, s.commits[head].tree),
    }


# --------------------------------------------------------------------------
# The request handler
# --------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def _serve(self) -> None:
        self.server.standin.handle(self)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def reply(self, status: int, text: str, headers: dict[str, str]) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            # The client gave up (timeout) before the slow answer came.
            self.close_connection = True

    def drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output quiet; the stand-in records requests itself


# --------------------------------------------------------------------------
# Test helpers: a fixture, and a clock that makes minutes take milliseconds
# --------------------------------------------------------------------------


@contextmanager
def running(**kwargs: Any) -> Iterator[GitHubStandIn]:
    """A started stand-in, checked for contract violations when the block ends.

    Use it as a pytest fixture body: ``with running() as gh: yield gh``.
    """
    graphql_schema(), _operations()  # load once up front, not inside a timed request
    standin = GitHubStandIn(**kwargs).start()
    try:
        yield standin
    finally:
        standin.stop()
    standin.check()


class FastClock:
    """An ``IReactorTime`` over the real reactor that runs every delay ``scale`` times faster.

    The client sees GitHub-sized waits (a 60 s back-off, a 30 s timeout) and
    the test spends milliseconds; ``delays`` records what was asked for so a
    test can check that ``retry-after`` was honoured.  ``seconds()`` is real
    time so GitHub's ``x-ratelimit-reset`` epochs stay meaningful.
    """

    def __init__(self, reactor: Any, scale: float = 0.001) -> None:
        self.reactor, self.scale = reactor, scale
        self.delays: list[float] = []

    def seconds(self) -> float:
        return self.reactor.seconds()

    def callLater(self, delay: float, f: Callable[..., Any], *a: Any, **kw: Any) -> IDelayedCall:
        self.delays.append(delay)
        return self.reactor.callLater(delay * self.scale, f, *a, **kw)

    def getDelayedCalls(self) -> list[IDelayedCall]:
        return self.reactor.getDelayedCalls()
