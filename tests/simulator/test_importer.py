"""The importer's pieces that need no master: records, selection, bookkeeping.

The importer converts with the plugin's helpers (:mod:`buildbot_revert.core.records`,
:mod:`buildbot_revert.core.blamelist`); these tests feed them the importer's typed
REST records.  The blamelist derivation itself is tested against a real master
in ``test_pull_integration.py`` (and at scale by ``benchmarks/pull.py``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buildbot_revert.core import blamelist
from buildbot_revert.core.evidence import StreakDepth
from buildbot_revert.core.model import Build, Builder, Change, FailedStep
from buildbot_revert.core.records import change_from_dict, failed_steps, is_failed_step, stdio_log
from buildbot_revert.core.selection import BuilderSelection
from simulator.history.change_index import ChangeIndex, blamed_ranges
from simulator.history.entities import (
    ChangeInfo,
    LogInfo,
    SourceStampInfo,
    parse_change,
    parse_log,
    parse_step,
)
from simulator.history.importer import (
    PullError,
    build_branch,
    pull,
    select_builders,
)
from simulator.history.pull_file import default_history_path
from simulator.history.rest_client import BuildbotAPI
from simulator.history.schema import SCHEMA_VERSION, HistoryError
from simulator.history.store import HistoryStore
from tests.simulator.old_schemas import as_version_5


def info(changeid: int, comments: str, *, revision: str | None = "abc", branch: str = "main",
         ssid: int | None = None) -> ChangeInfo:  # fmt: skip
    return ChangeInfo(
        changeid, revision, "Ada <ada@example.org>", comments, 1.0e9, ("Lib/a.py",),
        branch, "https://github.com/python/cpython", "", "cpython", ssid,
    )  # fmt: skip


def change_record(c: ChangeInfo) -> Change:
    return change_from_dict(c._asdict())


def test_change_record_title_and_pr() -> None:
    c = change_record(info(1, "gh-1234: Fix the parser (#5678)\n\nLonger text.\n"))
    assert c.title == "gh-1234: Fix the parser (#5678)"
    assert c.pr_number == 5678
    assert c.message.endswith("Longer text.\n")
    assert c.files == ("Lib/a.py",)
    # A number in the middle of the title is not a PR reference.
    assert change_record(info(2, "Revert #12 partially")).pr_number is None
    # A change without a revision (some change sources) still gets a stable key.
    assert change_record(info(3, "", revision=None)) == Change(
        "change-3", "Ada <ada@example.org>", "", 1.0e9, None, "", ("Lib/a.py",), "main"
    )


# A change as Buildbot's REST API and its data API both describe it (the data
# API hands out a datetime where REST has epoch seconds).
REST_CHANGE = {
    "changeid": 7, "revision": "f" * 40, "author": "Ada <ada@example.org>",
    "comments": "gh-1: Fix (#2)\n\nBody", "when_timestamp": 1700000000, "files": ["Lib/a.py"],
    "branch": "main", "repository": "https://github.com/python/cpython", "codebase": "",
    "project": "cpython", "sourcestamp": {"ssid": 70},
}  # fmt: skip


def test_typed_rest_records_convert_like_the_plugins_entities() -> None:
    """What the REST client keeps of an entity is enough for the shared rules."""
    typed = parse_change(REST_CHANGE)
    assert change_record(typed) == change_from_dict(REST_CHANGE)
    assert blamelist.change_line(typed._asdict()) == blamelist.change_line(REST_CHANGE)
    assert change_record(typed).pr_number == 2 and change_record(typed).when == 1.7e9
    steps = [{"stepid": 31, "number": 3, "name": "test", "results": 2},
             {"stepid": 30, "number": 0, "name": "compile", "results": 4},
             {"stepid": 29, "number": 1, "name": "tests", "results": 0}]  # fmt: skip
    typed_steps = [parse_step(s)._asdict() for s in steps]
    assert [s for s in steps if is_failed_step(s)] == [s for s in typed_steps if is_failed_step(s)]
    tails = {31: "tail", 30: None}
    assert failed_steps(typed_steps, tails) == (
        FailedStep("compile", 4, None),
        FailedStep("test", 2, "tail"),
    )
    logs = [{"logid": 1, "slug": "warnings", "num_lines": 3, "type": "t"},
            {"logid": 2, "slug": "stdio", "num_lines": 9, "type": "s"}]  # fmt: skip
    chosen = stdio_log(parse_log(x)._asdict() for x in logs)
    assert chosen is not None and LogInfo(**chosen) == parse_log(logs[1])
    # A log whose chunks the janitor deleted is missing evidence, not a log.
    assert stdio_log([parse_log({**logs[1], "type": "d"})._asdict()]) is None


tips_maps = st.dictionaries(st.sampled_from("LMN"), st.integers(1, 50), max_size=3)


@given(tips_maps, tips_maps)
def test_ranges_are_what_blame_asks_for(previous: dict[str, int], tips: dict[str, int]) -> None:
    """The importer fetches ``ranges()`` before blaming; blame must need no other."""
    asked: dict[str, tuple[int, int]] = {}

    def between(line: str, after: int, upto: int) -> list[int]:
        asked[line] = (after, upto)
        return list(range(after + 1, upto + 1))

    blamed, after = blamelist.blame(previous, tips, between)
    assert asked == blamelist.ranges(previous, tips)
    assert after == blamelist.advance(previous, tips)
    assert all(after[line] >= tip for line, tip in {**previous, **tips}.items())


FLEET = [
    Builder("AMD64 RHEL8 LTO 3.13", ("3.13", "stable", "tier-1")),
    Builder("AMD64 Windows PGO NoGIL PR", ("PullRequest", "unstable", "tier-1")),
    Builder("ARM64 macOS 3.x", ("3.x", "stable", "tier-2")),
]


def selected(selection: BuilderSelection) -> list[str]:
    return [b.name for b in select_builders(FLEET, selection)]


def test_select_builders_regex_and_all_tags() -> None:
    assert select_builders(FLEET, BuilderSelection()) == FLEET
    amd64_stable = BuilderSelection(re.compile("AMD64"), frozenset({"stable"}))
    assert selected(amd64_stable) == ["AMD64 RHEL8 LTO 3.13"]
    assert selected(BuilderSelection(tags=frozenset({"stable", "tier-2"}))) == ["ARM64 macOS 3.x"]


def test_select_builders_by_excluded_tags_and_by_names() -> None:
    """CPython's branch builders: every builder but the pull-request ones, or a list."""
    no_prs = BuilderSelection(exclude_tags=frozenset({"PullRequest"}))
    assert selected(no_prs) == ["AMD64 RHEL8 LTO 3.13", "ARM64 macOS 3.x"]
    listed = BuilderSelection(names=frozenset({"ARM64 macOS 3.x", "AMD64 Windows PGO NoGIL PR"}))
    assert selected(listed) == ["AMD64 Windows PGO NoGIL PR", "ARM64 macOS 3.x"]
    assert selected(BuilderSelection(exclude_tags=no_prs.exclude_tags, names=listed.names)) == [
        "ARM64 macOS 3.x"
    ]


def stamp(ssid: int, branch: str | None) -> SourceStampInfo:
    return SourceStampInfo(ssid, "abc", branch, "https://github.com/python/cpython", "", "cpython")


def test_a_builds_branch_is_its_first_sourcestamps_naming_one() -> None:
    assert build_branch([]) is None
    assert build_branch([stamp(7, None)]) is None
    assert build_branch([stamp(7, "refs/pull/12/merge")]) == "refs/pull/12/merge"
    # Several codebases: the lowest sourcestamp id that names a branch.
    assert build_branch([stamp(9, "main"), stamp(3, None), stamp(5, "3.13")]) == "3.13"


def _make_version(path: Path, version: int, blamed: list[int] | None = None) -> None:
    """A history as buildbot-revert wrote it at schema ``version`` (2 or 3).

    Version 2's builds had no branch, version 3's no ``changes`` column:
    their blamelists were in ``blamelist`` alone.
    """
    store = HistoryStore(path, create=True)
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1", ("stable",)))
        cids = [store.writer.add_change(Change(f"r{i}", "a", f"t{i}", float(i))) for i in range(4)]
        store.writer.add_build(bid, Build("b1", 1, 0, 1.0, 2.0), [cids[i] for i in blamed or []])
    store.close()
    as_version_5(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE builds DROP COLUMN changes")
        if version == 2:
            conn.execute("ALTER TABLE builds DROP COLUMN branch")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    conn.close()


def test_builds_keep_their_branch(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1"))
        store.writer.add_build(bid, Build("b1", 1, 0, 1.0, 2.0, branch="refs/pull/7/merge"), [])
        store.writer.add_build(bid, Build("b1", 2, 0, 3.0, 4.0), [])
        store.writer.add_builds_bulk(
            [
                (10, bid, 3, 0, 5.0, 6.0, None, None, None),
                (11, bid, 4, 0, 7.0, 8.0, "w", "main", None),
            ],
            [],
        )
    assert [(b.number, b.branch) for b in store.iter_builds()] == [
        (1, "refs/pull/7/merge"),
        (2, None),
        (3, None),
        (4, "main"),
    ]
    # Re-importing a build replaces its branch too.
    with store.transaction():
        store.writer.add_build(bid, Build("b1", 2, 0, 3.0, 4.0, branch="main"), [])
    assert [b.branch for b in store.iter_builds()][1] == "main"
    store.close()


def test_a_version_2_history_is_read_then_upgraded_by_its_next_build(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _make_version(path, 2)
    store = HistoryStore(path)
    assert [(b.number, b.branch) for b in store.iter_builds()] == [(1, None)]
    assert store.get_meta("schema_version") == "2"  # reading changes nothing
    store.close()
    store = HistoryStore(path, create=True)  # as a pull opens it
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1", ("stable",)))
        store.writer.add_build(bid, Build("b1", 2, 0, 3.0, 4.0, branch="main"), [])
    store.close()
    store = HistoryStore(path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert [(b.number, b.branch) for b in store.iter_builds()] == [(1, None), (2, "main")]
    store.close()


def test_a_version_3_history_reads_its_blamelists_then_gets_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _make_version(path, 3, blamed=[2, 0, 3])
    store = HistoryStore(path)
    revisions = [[c.revision for c in b.changes] for b in store.iter_builds()]
    assert revisions == [["r0", "r2", "r3"]]
    store.close()
    store = HistoryStore(path, create=True)  # as a pull opens it
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1", ("stable",)))
        store.writer.add_build(
            bid,
            Build("b1", 2, 0, 3.0, 4.0),
            [store.writer.add_change(Change("r1", "a", "t1", 1.0))],
        )
    store.close()
    store = HistoryStore(path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    # The upgrade wrote the old build's blamelist into its row, ascending.
    rows = store.conn.execute("SELECT number, changes FROM builds ORDER BY number").fetchall()
    assert rows == [(1, "1,3,4"), (2, "2")]
    revisions = [[c.revision for c in b.changes] for b in store.iter_builds()]
    assert revisions == [["r0", "r2", "r3"], ["r1"]]
    store.close()


@pytest.mark.parametrize("version", ["1", "7", "x"])
def test_other_schema_versions_are_refused_in_one_line(tmp_path: Path, version: str) -> None:
    path = tmp_path / "h.sqlite"
    HistoryStore(path, create=True).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    conn.close()
    with pytest.raises(
        HistoryError, match=f"schema version '{version}', .* reads 2, 3, 4, 5 and 6$"
    ):
        HistoryStore(path)


def test_changes_index_by_line(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    store.bookkeeping.ensure_import_tables()
    changes = ChangeIndex(store)
    for c in [info(5, "e", ssid=50), info(2, "b", ssid=20), info(3, "c", branch="3.13"),
              info(4, "d", ssid=40)]:  # fmt: skip
        changes.add(c)
    main = blamelist.line_key("https://github.com/python/cpython", "main", "", "cpython")
    assert changes.between(main, 2, 5) == [4, 5]
    assert changes.between(main, 0, 4) == [2, 4]
    assert changes.by_ssid == {50: 5, 20: 2, 40: 4}
    # What a pull writes comes back on the next one.
    with store.transaction():
        cid = store.writer.add_change(change_record(info(4, "d")))
        store.bookkeeping.add_import_change(4, cid, 40, main)
    again = ChangeIndex(store)
    assert again.between(main, 0, 10) == [4] and again.by_ssid == {40: 4}
    store.close()


def test_fetched_changes_stay_one_range(tmp_path: Path) -> None:
    """Each change id is asked for once: what is fetched grows as one contiguous range."""
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    store.bookkeeping.ensure_import_tables()
    changes = ChangeIndex(store)
    assert changes.unfetched([]) == []
    assert changes.unfetched([(4, 6), (2, 5)]) == [(2, 6)]
    changes.mark_fetched([(2, 6)])
    assert changes.fetched_range == (3, 6)
    assert changes.unfetched([(3, 5)]) == []
    assert changes.unfetched([(0, 9)]) == [(0, 2), (6, 9)]
    changes.mark_fetched([(0, 2), (6, 9)])
    assert changes.fetched_range == (1, 9)
    store.close()


def test_blamed_ranges_follow_each_builders_tips() -> None:
    """Ranges are against the builder's tips as advanced by its earlier builds on the page."""
    before = {"b1": {"L": 3}}
    page = [("b1", {"L": 5}), ("b2", {"L": 4}), ("b1", {"L": 8, "M": 2})]
    assert blamed_ranges(before, page) == [
        *blamelist.ranges({"L": 3}, {"L": 5}).values(),
        *blamelist.ranges({}, {"L": 4}).values(),
        *blamelist.ranges({"L": 5}, {"L": 8, "M": 2}).values(),
    ]
    assert before == {"b1": {"L": 3}}  # the caller's tips are not moved


def test_import_bookkeeping(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    store.bookkeeping.ensure_import_tables()
    store.bookkeeping.ensure_import_tables()  # idempotent
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1"))
        for number, tips, at in [(1, {"L": 3}, 100.0), (2, {"L": 7, "M": 1}, 200.0),
                                 (3, {"L": 5}, 300.0)]:  # fmt: skip
            build = Build("b1", number, 0, at - 10, at)
            store.bookkeeping.add_import_build(
                1000 + number, store.writer.add_build(bid, build, []), tips, at
            )
    assert store.bookkeeping.import_builder_tips() == {"b1": {"L": 7, "M": 1}}
    assert store.bookkeeping.import_build_ids(200.0) == {1002, 1003}
    assert store.bookkeeping.import_build_ids() == {1001, 1002, 1003}
    store.close()


def test_a_later_pull_goes_on_counting_the_streaks_the_history_ends_with(tmp_path: Path) -> None:
    """What the store gives a pull to resume StreakDepth: each builder's open streak."""
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    pr = "refs/pull/9/merge"
    runs = {
        "red": [(0, "main"), (2, "main"), (2, pr), (2, "main"), (2, None)],
        "green": [(2, "main"), (2, "main"), (4, "main")],
        "empty": [],
    }
    with store.transaction():
        for name, builds in runs.items():
            bid = store.writer.add_builder(Builder(name))
            for number, (result, branch) in enumerate(builds, 1):
                build = Build(name, number, result, 10.0 * number, 10.0 * number + 5, branch=branch)
                store.writer.add_build(bid, build, [])
    ids = store.builder_ids()
    assert store.bookkeeping.trailing_failures(ids["red"]) == runs["red"]
    assert store.bookkeeping.trailing_failures(ids["green"]) == [(4, "main")]
    assert store.bookkeeping.trailing_failures(ids["empty"]) == []
    counted = StreakDepth(None)
    for name in runs:
        for result, branch in store.bookkeeping.trailing_failures(ids[name]):
            counted.feed(name, result, branch)
    # The pull request's failure does not count: the red builder's streak is 3 long.
    assert counted.counts() == {"red": 3}
    resumed = StreakDepth(4, counted.counts())
    assert [resumed.feed("red", 2, "main") for _ in range(2)] == [True, False]
    store.close()


def test_default_history_is_per_master(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("sys.platform", "linux")
    a = default_history_path("https://buildbot.python.org/all/")
    assert a == default_history_path("https://buildbot.python.org/all/api/v2")
    assert a == default_history_path("https://buildbot.python.org/all/#/builders")
    assert a.parent == tmp_path / "buildbot-revert"
    assert a.name.startswith("buildbot.python.org_all-") and a.suffix == ".sqlite"
    assert default_history_path("http://127.0.0.1:8010/") != a


def test_refuses_a_history_not_pulled_from_this_master(serve, python_org, tmp_path: Path) -> None:
    server = serve(python_org)
    generated = HistoryStore(tmp_path / "generated.sqlite", create=True)
    with generated.transaction():
        bid = generated.writer.add_builder(Builder("b1"))
        generated.writer.add_build(bid, Build("b1", 1, 0, 1.0, 2.0), [])
    with BuildbotAPI(server.url + "/all", backoff=0.01) as api:
        with pytest.raises(PullError, match="not pulled from a master"):
            pull(api, generated)
        nothing = HistoryStore(tmp_path / "n.sqlite", create=True)
        with pytest.raises(PullError, match="none of its 2 builders matches"):
            pull(api, nothing, selection=BuilderSelection(re.compile("^Windows")))
    # Refusing wrote nothing.
    assert generated.get_meta("import.master") is None
    assert json.loads(nothing.get_meta("import.synced") or "{}") == {}
    generated.close()
    nothing.close()


# -- a pull from a small master speaking Buildbot's REST API -----------------------

REPO = "https://github.com/python/cpython"


def _sourcestamp(ssid: int, branch: str | None, revision: str | None) -> dict[str, Any]:
    return {"ssid": ssid, "branch": branch, "revision": revision, "repository": REPO,
            "codebase": "", "project": "cpython", "patch": None, "created_at": 1}  # fmt: skip


def _change(changeid: int, ssid: int, branch: str, comments: str) -> dict[str, Any]:
    return {"changeid": changeid, "revision": f"{changeid:040x}", "author": "Ada <a@x.org>",
            "comments": comments, "when_timestamp": 1_700_000_000 + changeid,
            "files": [f"Lib/m{changeid}.py"], "branch": branch, "repository": REPO,
            "codebase": "", "project": "cpython",
            "sourcestamp": _sourcestamp(ssid, branch, f"{changeid:040x}")}  # fmt: skip


# Two builders: CPython's main builder and its pull-request twin.  Change 1
# lands on main; change 2 is a pull request's merge ref, built by the PR
# builder; build 12 is forced (a sourcestamp with a branch and no change).
SMALL_MASTER: dict[str, list[dict[str, Any]]] = {
    "builders": [
        {"builderid": 1, "name": "AMD64 Debian", "tags": ["stable", "3.x"]},
        {"builderid": 2, "name": "AMD64 Debian PR", "tags": ["PullRequest", "stable"]},
    ],
    "workers": [{"workerid": 1, "name": "debian"}],
    "changes": [
        _change(1, 10, "main", "gh-1: Fix the parser (#101)"),
        _change(2, 20, "refs/pull/102/merge", "gh-2: Try a thing"),
    ],
    "buildsets": [
        {"bsid": 100, "sourcestamps": [_sourcestamp(10, "main", f"{1:040x}")]},
        {"bsid": 200, "sourcestamps": [_sourcestamp(20, "refs/pull/102/merge", f"{2:040x}")]},
        {"bsid": 300, "sourcestamps": [_sourcestamp(30, "main", None)]},
    ],
    "buildrequests": [
        {"buildrequestid": 1000, "buildsetid": 100},
        {"buildrequestid": 2000, "buildsetid": 200},
        {"buildrequestid": 3000, "buildsetid": 300},
    ],
    "builds": [
        {
            "buildid": 11,
            "builderid": 1,
            "number": 1,
            "buildrequestid": 1000,
            "workerid": 1,
            "results": 0,
            "started_at": 1_700_000_100,
            "complete_at": 1_700_000_200,
            "complete": True,
        },
        {
            "buildid": 21,
            "builderid": 2,
            "number": 1,
            "buildrequestid": 2000,
            "workerid": 1,
            "results": 0,
            "started_at": 1_700_000_150,
            "complete_at": 1_700_000_250,
            "complete": True,
        },
        {
            "buildid": 12,
            "builderid": 1,
            "number": 2,
            "buildrequestid": 3000,
            "workerid": 1,
            "results": 0,
            "started_at": 1_700_000_300,
            "complete_at": 1_700_000_400,
            "complete": True,
        },
    ],  # fmt: skip
}


def _matches(row: dict[str, Any], filters: dict[str, list[str]]) -> bool:
    """Buildbot's filter semantics, enough for the importer: ``field__op=value``, OR'd values."""
    ops = {"eq": lambda a, b: a == b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
           "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}  # fmt: skip
    for key, values in filters.items():
        name, _, op = key.partition("__")
        have = row.get(name)
        wanted = [(v == "true") if isinstance(have, bool) else type(have)(v) for v in values]
        if not any(ops[op or "eq"](have, w) for w in wanted):
            return False
    return True


def small_master(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
    """The REST answers of :data:`SMALL_MASTER` under ``/api/v2``."""
    key = path.removeprefix("/api/v2").strip("/")
    if not key:
        links = ("builders", "builds", "buildrequests", "buildsets", "changes", "workers")
        return 200, json.dumps({"rootlinks": [{"name": n} for n in links]}).encode()
    if key not in SMALL_MASTER:
        return 404, b'{"error": "Invalid path"}'
    special = {"field", "order", "limit", "offset"}
    filters: dict[str, list[str]] = {}
    for name, value in query:
        if name not in special:
            filters.setdefault(name, []).append(value)
    rows = [r for r in SMALL_MASTER[key] if _matches(r, filters)]
    for order in reversed([v for k, v in query if k == "order"]):
        rows.sort(key=lambda r, o=order: r[o.lstrip("-")], reverse=order.startswith("-"))
    params = dict(query)
    offset = int(params.get("offset", 0))
    limit = int(params["limit"]) if "limit" in params else None
    page = rows[offset : None if limit is None else offset + limit]
    return 200, json.dumps({key: page, "meta": {"total": len(rows)}}).encode()


def test_a_pull_stores_each_builds_branch_from_its_sourcestamps(serve, tmp_path: Path) -> None:
    server = serve(small_master)
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    with BuildbotAPI(server.url, backoff=0.01) as api:
        stats = pull(api, store)
    assert stats.builds == 3
    got = {
        (b.builder, b.number): (b.branch, [c.title for c in b.changes]) for b in store.iter_builds()
    }
    assert got == {
        ("AMD64 Debian", 1): ("main", ["gh-1: Fix the parser (#101)"]),
        ("AMD64 Debian PR", 1): ("refs/pull/102/merge", ["gh-2: Try a thing"]),
        # A forced build: no change behind it, its sourcestamp's branch all the same.
        ("AMD64 Debian", 2): ("main", []),
    }
    store.close()


def test_a_pull_leaves_out_the_builders_its_selection_excludes(serve, tmp_path: Path) -> None:
    server = serve(small_master)
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    with BuildbotAPI(server.url, backoff=0.01) as api:
        pull(api, store, selection=BuilderSelection(exclude_tags=frozenset({"PullRequest"})))
    assert [b.name for b in store.builders()] == ["AMD64 Debian"]
    assert [(b.builder, b.number) for b in store.iter_builds()] == [
        ("AMD64 Debian", 1),
        ("AMD64 Debian", 2),
    ]
    store.close()
