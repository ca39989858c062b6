"""The Buildbot REST client against real HTTP on 127.0.0.1.

A small threaded HTTP server answers with the response bodies recorded from
buildbot.python.org (``tests/fixtures/buildbot.python.org/``) or with the
failures a real master or proxy produces (5xx, dropped connections, HTML),
and records the requests it saw so the tests can check the query strings.
"""

from __future__ import annotations

import json

import pytest

from buildbot_revert.core.verification import REASON_PREFIX
from simulator.history.entities import BuilderInfo, BuildInfo, parse_build, parse_builder
from simulator.history.rest_client import BuildbotAPI, BuildbotAPIError, NotFound, api_url


def fast(url: str, **kwargs: object) -> BuildbotAPI:
    return BuildbotAPI(url, timeout=2.0, backoff=0.01, **kwargs)  # type: ignore[arg-type]


def test_recorded_responses_parse(serve, python_org) -> None:
    server = serve(python_org)
    with fast(server.url + "/all/") as api:
        api.check()
        builders = api.builders()
        assert builders == [
            BuilderInfo(3, "AMD64 RHEL8 LTO 3.13", ("3.13", "stable", "lto", "nondebug", "tier-1")),
            BuilderInfo(
                1623,
                "AMD64 Windows PGO NoGIL PR",
                ("PullRequest", "unstable", "win64", "nogil", "nondebug", "pgo", "tier-1"),
            ),
        ]
        rows, total = api.collection("/builders/3/builds", fields=("buildid",))
        assert total == 1
        assert [parse_build(r) for r in rows] == [
            BuildInfo(1732278, 3, 228, 2341889, 28, 2, 1734197714.0, 1734198808.0)
        ]
        assert api.collection("/builders/1623/builds") == ([], 0)
        (green,) = api.all("/builds", fields=("buildid",))
        assert parse_build(green).results == 0
        assert parse_build(green).complete_at - parse_build(green).started_at == 957


def test_every_fixture_parses_with_the_record_types(recorded) -> None:
    for d in json.loads(recorded("builders.json"))["builders"]:
        assert parse_builder(d).name == d["name"]
    for name in ("failure.json", "success.json", "no-builds.json"):
        for d in json.loads(recorded(name))["builds"]:
            b = parse_build(d)
            assert b.number == d["number"] and b.buildrequestid == d["buildrequestid"]


def test_filters_and_order_name_their_fields(serve, python_org) -> None:
    server = serve(python_org)
    with fast(server.url + "/all/api/v2") as api:
        api.collection(
            "/builds",
            fields=("buildid",),
            filters=[("complete_at__ge", 1734197714.0), ("builderid", 3), ("builderid", 7)],
            order=("-complete_at",),
            limit=10,
        )
    path, query = server.seen[-1]
    assert path == "/all/api/v2/builds"
    fields = [v for k, v in query if k == "field"]
    assert sorted(fields) == ["builderid", "buildid", "complete_at"]
    assert ("complete_at__ge", "1734197714") in query  # integer, as Buildbot wants
    assert [v for k, v in query if k == "builderid"] == ["3", "7"]
    assert ("order", "-complete_at") in query and ("limit", "10") in query


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://buildbot.python.org/all", "https://buildbot.python.org/all/api/v2"),
        ("https://buildbot.python.org/all/", "https://buildbot.python.org/all/api/v2"),
        ("https://buildbot.python.org/all/#/builders", "https://buildbot.python.org/all/api/v2"),
        ("https://buildbot.python.org/all/api/v2/", "https://buildbot.python.org/all/api/v2"),
        ("http://127.0.0.1:8010", "http://127.0.0.1:8010/api/v2"),
    ],
)
def test_base_or_api_url(given: str, expected: str) -> None:
    assert api_url(given) == expected


def test_not_an_url() -> None:
    with pytest.raises(BuildbotAPIError, match="not an http"):
        api_url("buildbot.python.org")


def test_retries_5xx_and_dropped_connections(serve, python_org) -> None:
    failures = iter([(502, b"bad gateway"), None, (503, b"busy")])

    def flaky(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes] | None:
        answer = next(failures, "ok")
        return python_org(path, query) if answer == "ok" else answer

    server = serve(flaky)
    with fast(server.url + "/all", retries=4) as api:
        assert [b.builderid for b in api.builders()] == [3, 1623]
        assert api.requests == 4
    assert len(server.seen) == 4


def test_gives_up_with_one_line(serve) -> None:
    server = serve(lambda path, query: (500, b"oops"))
    with fast(server.url, retries=2) as api, pytest.raises(BuildbotAPIError) as err:
        api.builders()
    assert str(err.value) == f"cannot reach {server.url}/api/v2 (HTTP 500, after 3 attempts)"
    assert len(server.seen) == 3


def test_unreachable_master() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with fast(f"http://127.0.0.1:{port}/", retries=1) as api, pytest.raises(BuildbotAPIError) as e:
        api.check()
    assert str(e.value).startswith(f"cannot reach http://127.0.0.1:{port}/api/v2 (")
    assert "\n" not in str(e.value)


def test_not_a_buildbot_master(serve) -> None:
    html = serve(lambda path, query: (200, b"<html><body>Welcome</body></html>"))
    with fast(html.url) as api, pytest.raises(BuildbotAPIError, match="Buildbot 4 master"):
        api.check()
    other = serve(lambda path, query: (200, b'{"hello": "world"}'))
    with fast(other.url) as api, pytest.raises(BuildbotAPIError, match="not a Buildbot 4"):
        api.check()
    # JSON that is not an object at all: still one clear error, not a crash.
    for body in (b'["rootlinks"]', b'"rootlinks"', b'{"rootlinks": "builds"}'):
        odd = serve(lambda path, query, body=body: (200, body))
        with fast(odd.url) as api, pytest.raises(BuildbotAPIError, match="not a Buildbot 4"):
            api.check()


def test_bad_query_and_missing_resource(serve) -> None:
    def route(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
        if path.endswith("/contents"):
            return 404, b'{"error": "not found"}'
        return 400, b'{"error": "no such field \'bogus\'"}'

    server = serve(route)
    with fast(server.url) as api:
        with pytest.raises(BuildbotAPIError, match="HTTP 400: no such field 'bogus'"):
            api.collection("/builds", fields=("bogus",))
        with pytest.raises(NotFound):
            api.get("/logs/1/contents")


def test_credentials_never_shown(serve) -> None:
    server = serve(lambda path, query: (500, b""))
    url = server.url.replace("http://", "http://alice:s3cret-token@")
    with fast(url, retries=0) as api, pytest.raises(BuildbotAPIError) as err:
        api.check()
    assert "s3cret" not in str(err.value) and "alice" not in str(err.value)
    assert "s3cret" not in api.display_url


def test_buildsets_keep_their_branch_and_say_which_were_requested(serve) -> None:
    """What the importer reads a build's branch from: its buildset's sourcestamps.

    The same query says which buildsets buildbot-revert requested (by their
    reason): one request for both.
    """
    stamp = {
        "ssid": 5,
        "revision": "a" * 40,
        "repository": "https://github.com/python/cpython",
        "codebase": "",
        "project": "cpython",
        "patch": None,
        "created_at": 1734197000,
    }
    buildsets = [
        {
            "bsid": 7,
            "sourcestamps": [{**stamp, "branch": "refs/pull/127001/merge"}],
            "reason": "scheduler",
        },
        {
            "bsid": 8,
            "sourcestamps": [{**stamp, "ssid": 6, "branch": None}],
            "reason": REASON_PREFIX + "verification of abc",
        },
    ]

    def route(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
        wanted = {int(v) for k, v in query if k == "bsid"}
        rows = [b for b in buildsets if b["bsid"] in wanted]
        return 200, json.dumps({"buildsets": rows, "meta": {"total": len(rows)}}).encode()

    server = serve(route)
    with fast(server.url) as api:
        buildsets = api.buildsets([7, 8])
    assert [ss.branch for ss in buildsets[7][0]] == ["refs/pull/127001/merge"]
    assert [(ss.ssid, ss.branch) for ss in buildsets[8][0]] == [(6, None)]
    assert (buildsets[7][1], buildsets[8][1]) == (False, True)
    assert len(server.seen) == 1
    path, query = server.seen[-1]
    assert path == "/api/v2/buildsets" and sorted(v for k, v in query if k == "bsid") == ["7", "8"]


def test_without_keepalive_no_connection_outlives_its_request(serve) -> None:
    """Connections are kept open over HTTPS only, unless told."""
    server = serve(lambda path, query: (200, b"{}"))
    assert not BuildbotAPI(server.url).keepalive
    assert BuildbotAPI("https://buildbot.python.org/all").keepalive
    for keepalive in (True, False):
        with BuildbotAPI(server.url, keepalive=keepalive) as api:
            assert api.get("/builders") == {}
            # The server closed the connection it was asked to: nothing to reuse.
            assert (getattr(api._local, "conn", None) is not None) is keepalive


def test_dense_ids_are_read_as_a_range_and_sparse_ones_by_name(serve) -> None:
    """A page of builds' build requests are nearly contiguous: one range, a page at a time."""
    held = [{"buildrequestid": i, "buildsetid": i // 3} for i in range(1, 6001)]

    def route(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
        rows = held
        for name, value in query:
            if name == "buildrequestid__ge":
                rows = [r for r in rows if r["buildrequestid"] >= int(value)]
            elif name == "buildrequestid__le":
                rows = [r for r in rows if r["buildrequestid"] <= int(value)]
        named = {int(v) for k, v in query if k == "buildrequestid"}
        if named:
            rows = [r for r in rows if r["buildrequestid"] in named]
        params = dict(query)
        offset, limit = int(params.get("offset", 0)), int(params.get("limit", len(rows)))
        page = rows[offset : offset + limit]
        return 200, json.dumps({"buildrequests": page, "meta": {}}).encode()

    server = serve(route)
    # 2,399 of the ids from 1001 to 3999: one range, two pages of rows.
    dense = [i for i in range(1001, 4000) if i % 5]
    with fast(server.url) as api:
        got = api.buildrequest_buildsets(dense)
    assert got == {i: i // 3 for i in dense}
    assert len(server.seen) == 2
    for _, query in server.seen:
        assert ("buildrequestid__ge", "1001") in query and ("buildrequestid__le", "3999") in query
        assert not any(k == "buildrequestid" for k, _ in query)
    # 300 ids over 3,000: by name, 250 a request.
    server.seen.clear()
    sparse = list(range(1, 3001, 10))
    with fast(server.url) as api:
        assert api.buildrequest_buildsets(sparse) == {i: i // 3 for i in sparse}
    assert len(server.seen) == 2
    assert all(not any("__" in k for k, _ in query) for _, query in server.seen)
