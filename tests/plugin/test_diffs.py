"""The plugin's diff source: a suspect's patch fetched from GitHub once, kept in the ledger.

Over real HTTP to the GitHub stand-in on 127.0.0.1 and a real ledger
(SQLite, PostgreSQL): the patch is fetched once and read back after a "restart" (a new
source on the same database) without asking GitHub; GitHub's "no such
commit" is kept as an answer; a server error is one log line, the decision
gets no diff, and the revision is not asked again in the same process.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import reactor

from buildbot_revert.core.model import Change
from buildbot_revert.github.responses import CommitFile
from buildbot_revert.plugin.diffs import DiffSource
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_patches import (
    PatchFormatError,
    decode_patch,
    encode_patch,
)
from buildbot_revert.plugin.ledger_tables import patches_table
from testkit.databases import engine_runner
from testkit.github import FastClock, Fault, GitHubStandIn
from tests.plugin.test_github_client import make_client

BEFORE = (
    "import unittest\n\n\nclass XTests(unittest.TestCase):\n    def test_a(self):\n        pass\n"
)
ADDED = BEFORE + "\n    def test_new(self):\n        self.assertEqual(1, 2)\n"
COMMIT = "a1" * 20


@pytest.fixture
def clock():
    return FastClock(reactor)


def seed(github: GitHubStandIn) -> Change:
    github.push_commit("Add x's tests", {"tests/test_x.py": BEFORE})
    github.push_commit("Add a failing case", {"tests/test_x.py": ADDED}, sha=COMMIT)
    return Change(COMMIT, "alice", 0.0, ("tests/test_x.py",), "Add a failing case")


def fetches(github: GitHubStandIn) -> int:
    return len(github.requests_to("GET", f"/repos/*/commits/{COMMIT}"))


@pytest_twisted.inlineCallbacks
def test_the_patch_is_fetched_once_and_read_back_after_a_restart(engine, github, clock):
    change = seed(github)
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    source = DiffSource(ledger, make_client(github, clock), clock.seconds)
    yield source.prefetch([change], fetch=True)
    diff = source.read(change)
    assert diff is not None
    [hunk] = diff.hunks
    assert hunk.path == "tests/test_x.py" and "test_new" in hunk.added_defines()
    yield source.prefetch([change], fetch=True)
    source.forget()
    assert source.read(change) is None
    # A restarted reporter: a new source, the same database, no GitHub call.
    again = DiffSource(ledger, make_client(github, clock), clock.seconds)
    yield again.prefetch([change], fetch=True)
    assert again.read(change) == diff
    assert fetches(github) == 1 and again.fetched == 0
    github.check()


@pytest_twisted.inlineCallbacks
def test_an_unknown_commit_is_kept_as_no_diff(engine, github, clock, logged):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    change = Change("b2" * 20, "bob", 0.0, ("Lib/x.py",), "Not on GitHub")
    source = DiffSource(ledger, make_client(github, clock), clock.seconds)
    yield source.prefetch([change], fetch=True)
    assert source.read(change) is None
    assert (yield ledger.patches.of([change.revision])) == {change.revision: None}
    assert not [line for line in logged if "could not fetch" in line]


@pytest_twisted.inlineCallbacks
def test_a_server_error_is_logged_once_and_the_decision_gets_no_diff(engine, github, clock, logged):
    change = seed(github)
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    github.inject("GET", "/repos/*/commits/*", Fault.server_error(500), times=100)
    source = DiffSource(ledger, make_client(github, clock, max_attempts=2), clock.seconds)
    for _ in range(3):
        yield source.prefetch([change], fetch=True)
        assert source.read(change) is None
        source.forget()
    said = [line for line in logged if "could not fetch the diff" in line]
    assert len(said) == 1, said
    assert COMMIT[:12] in said[0] and "deciding without it" in said[0]
    assert fetches(github) == 2  # the client's two attempts, once
    assert (yield ledger.patches.of([COMMIT])) == {}


@pytest_twisted.inlineCallbacks
def test_a_replay_reads_the_ledger_only(engine, github, clock):
    change = seed(github)
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    source = DiffSource(ledger, make_client(github, clock), clock.seconds)
    yield source.prefetch([change], fetch=False)
    assert source.read(change) is None and fetches(github) == 0


@pytest_twisted.inlineCallbacks
def test_a_row_of_another_format_is_fetched_again(engine, github, clock, logged):
    change = seed(github)
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    with engine.begin() as conn:
        conn.execute(
            patches_table.insert().values(
                revision=COMMIT, document='{"format": 99, "files": []}', fetched_at=0.0
            )
        )
    source = DiffSource(ledger, make_client(github, clock), clock.seconds)
    yield source.prefetch([change], fetch=True)
    assert source.read(change) is not None and fetches(github) == 1
    assert any("stored patch of" in line and "format 99" in line for line in logged)


@pytest.mark.parametrize(
    "document",
    ["[]", "not json", '{"format": 1, "files": [["a"]]}', '{"format": 1, "files": {}}'],
)
def test_a_document_that_is_not_a_patch_is_refused(document):
    with pytest.raises(PatchFormatError):
        decode_patch(document)


def test_the_document_keeps_files_without_a_patch_and_unknown_commits():
    files = (CommitFile("a.py", "@@ -1 +1 @@\n-a\n+b"), CommitFile("logo.png", None))
    assert decode_patch(encode_patch(files)) == files
    assert decode_patch(encode_patch(None)) is None
