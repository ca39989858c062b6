"""A small real-looking history and the GitHub repository it came from, for ``--github``.

Five changes, all merged through pull requests on the stand-in, and the
history of four builders written with the store API:

* ``a`` breaks ``AMD64 Ubuntu``; the plugin would file its revert at the
  third failure; a person opens a revert pull request (GitHub's button:
  ``Revert "<title>"``, body ``Reverts python/cpython#N``) 17 h after that
  and merges it 20 h after; its merge commit is in the history and turns
  the builder green.
* ``b`` breaks ``ARM64 macOS``; ``f``, touching the same file, fixes it
  forward in its own pull request.
* ``c`` breaks ``s390x RHEL`` (its title has no ``(#N)``: its pull request
  is found from the commit); the only revert pull request about it is the
  plugin's own (it carries the marker), which is no person's.
* ``d`` breaks nothing, but a person reverts it (git's wording: ``This
  reverts commit <sha>``): a revert the policy could not propose (recall).
* ``e`` breaks nothing either; a person backs it out in a pull request not
  titled as a revert (``This reverts commit <sha>`` in its message only):
  the month's search for revert titles misses it, the history's revert
  commit finds it.
* an unrelated open pull request, and a revert of a change the history does
  not hold.

The culprits' pull requests carry labels, one of them hostile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from buildbot_revert.core.model import Build, Builder, Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.references import revert_marker
from simulator.history.store import HistoryStore
from testkit.github import GitHubStandIn
from testkit.github.state import iso
from tests.builds_dsl import builds
from tests.simulator.reports_fixtures import compile_error

HOUR = 3600.0
REPO = "python/cpython"
HOSTILE_LABEL = "@python/core-team <b>x</b>"
# When the person's revert of ``a`` was opened and merged, after the plugin's filing.
REVERT_OPENED_AFTER = 17 * HOUR
REVERT_MERGED_AFTER = 20 * HOUR


@dataclass
class Scenario:
    history: Path
    filed_a: float
    pr: dict[str, int]
    sha: dict[str, str]


def _set_times(gh: GitHubStandIn, number: int, created: float, merged: float | None) -> None:
    pull = gh.pulls[number]
    pull.created_at = iso(created)
    pull.updated_at = iso(merged or created)
    if merged is not None:
        pull.merged_at = pull.closed_at = iso(merged)


def build_scenario(gh: GitHubStandIn, path: Path, start: float) -> Scenario:
    """Seed ``gh`` and write the matching history to ``path`` (builds from ``start``)."""
    n = Policy().failures
    pr: dict[str, int] = {}
    sha: dict[str, str] = {}
    pr["a"], sha["a"] = gh.add_merged_pr(
        "gh-101: Speed up dict lookups",
        "alice",
        {"Objects/dictobject.c": "fast\n"},
        labels=("performance", HOSTILE_LABEL),
    )
    pr["b"], sha["b"] = gh.add_merged_pr(
        "gh-102: New parser", "bob", {"Parser/parser.c": "new\n"}, labels=("type-feature",)
    )
    pr["f"], sha["f"] = gh.add_merged_pr(
        "gh-102: Fix the new parser", "bob", {"Parser/parser.c": "x"}
    )
    pr["c"], sha["c"] = gh.add_merged_pr(
        "gh-103: Tidy objects", "carol", {"Objects/uc.c": "tidy\n"}
    )
    pr["d"], sha["d"] = gh.add_merged_pr("gh-104: Rename a helper", "dan", {"Lib/x.py": "y\n"})
    pr["e"], sha["e"] = gh.add_merged_pr("gh-106: Cache the lookups", "eve", {"Lib/c.py": "c\n"})
    pr["re"], sha["re"] = gh.add_merged_pr(
        "gh-106: Back out the cache",
        "eve",
        {"Lib/c.py": "none\n"},
        body=f"This reverts commit {sha['e']}.",
    )
    pr["ra"], sha["ra"] = gh.add_merged_pr(
        'Revert "gh-101: Speed up dict lookups"',
        "erin",
        {"Objects/dictobject.c": "slow\n"},
        body=f"Reverts {REPO}#{pr['a']}",
    )
    pr["rd"], sha["rd"] = gh.add_merged_pr(
        f'Revert "gh-104: Rename a helper (#{pr["d"]})"',
        "dan",
        {"Lib/x.py": "x\n"},
        body=f"This reverts commit {sha['d']}.",
    )
    bot = gh.add_open_pr(
        f'Revert "gh-103: Tidy objects (#{pr["c"]})"',
        "buildbot-revert-bot",
        {"Objects/uc.c": "old\n"},
        body=f"The plugin's revert.\n\n{revert_marker(sha['c'])}",
    )
    gh.add_open_pr("gh-105: Unrelated work", "frank", {"Lib/y.py": "z\n"})
    gh.add_open_pr('Revert "gh-1: Not in this history"', "gina", {"Lib/z.py": "z\n"})

    # Builds an hour apart: a green one, then the culprit's N failures.
    a_lands = start + HOUR - 60
    filed_a = start + n * HOUR
    revert_opened = filed_a + REVERT_OPENED_AFTER
    revert_merged = filed_a + REVERT_MERGED_AFTER
    times = {
        "a": (a_lands - HOUR, a_lands),
        "b": (start, start + HOUR - 60),
        "f": (start + 30 * HOUR, start + 40 * HOUR - 60),
        "c": (start, start + HOUR - 60),
        "d": (start, start + HOUR - 60),
        "ra": (revert_opened, revert_merged),
        "rd": (start + 2 * HOUR, start + 5 * HOUR),
        "e": (start, start + HOUR - 60),
        "re": (start + 3 * HOUR, start + 6 * HOUR - 60),
    }
    for key, (created, merged) in times.items():
        _set_times(gh, pr[key], created, merged)
    _set_times(gh, bot, filed_a, None)

    titles = {key: gh.pulls[pr[key]].title for key in times}
    changes = {
        key: Change(
            sha[key],
            gh.pulls[pr[key]].user,
            # Squash merges end in "(#N)"; "c" is found from its commit instead.
            titles[key] if key == "c" else f"{titles[key]} (#{pr[key]})",
            times[key][1],
            None,
            gh.commits[sha[key]].message,
            tuple(_files(gh, sha[key])),
        )
        for key in times
    }
    logs = {u: compile_error(u) for u in ("ua", "ub", "uc")}

    def red(key: str, unit: str) -> str:
        """A green build, then N failures, the first holding change ``key``."""
        return f"S F:{key}@{unit} " + " ".join([f"F@{unit}"] * (n - 1))

    history = [
        *builds(red("a", "ua"), "AMD64 Ubuntu", start, changes, HOUR, logs),
        *builds("S:ra", "AMD64 Ubuntu", revert_merged + HOUR, changes, HOUR),
        *builds(red("b", "ub"), "ARM64 macOS", start, changes, HOUR, logs),
        *builds("S:f", "ARM64 macOS", start + 40 * HOUR, changes, HOUR),
        *builds(red("c", "uc"), "s390x RHEL", start, changes, HOUR, logs),
        *builds("S:d,e S:rd,re S", "x86 Gentoo", start + 6 * HOUR, changes, HOUR),
    ]
    _write(path, _renumbered(history), changes.values())
    return Scenario(path, filed_a, pr, sha)


def _files(gh: GitHubStandIn, sha: str) -> list[str]:
    commit = gh.commits[sha]
    before = gh.trees[gh.commits[commit.parents[0]].tree]
    after = gh.trees[commit.tree]
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _renumbered(history: list[Build]) -> list[Build]:
    """Number each builder's builds 1, 2, ... across the pieces written above."""
    count: dict[str, int] = {}
    out = []
    for b in history:
        count[b.builder] = count.get(b.builder, 0) + 1
        out.append(b._replace(number=count[b.builder]))
    return out


def _write(path: Path, history: list[Build], changes: Iterable[Change]) -> None:
    store = HistoryStore(path, create=True)
    with store.transaction():
        ids = {
            name: store.writer.add_builder(Builder(name, ("stable",)))
            for name in sorted({b.builder for b in history})
        }
        cids = {c.revision: store.writer.add_change(c) for c in changes}
        for b in history:
            store.writer.add_build(ids[b.builder], b, [cids[c.revision] for c in b.changes])
    store.close()
