"""Tests of the generator of the shipped history (simulator/synthetic/).

Most tests generate a short window with a thinned fleet (a few seconds at
most); one test checks the full-size properties on the shipped history
itself, which the first run generates once and later runs reuse.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from simulator.history.schema import SCHEMA_VERSION
from simulator.history.store import HistoryStore
from simulator.history.tails import register as register_log_text
from simulator.synthetic import branches, generator
from simulator.synthetic.fleet import FLEET, build_fleet
from simulator.synthetic.generator import generate

GREEN = (0, 1)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "small.sqlite"
    generate(path, seed=7, days=21, builders=40)
    return path


def _dump(path: Path) -> dict[str, list[tuple]]:
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    # Every row in stored order (a WITHOUT ROWID table's is its primary key's).
    out = {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in sorted(tables)}
    db.close()
    return out


PR = "pull requests"  # the "branch" of a pull-request builder here


def _branch_of(tags: tuple[str, ...] | list[str]) -> str:
    """A builder's branch, from its one branch tag ("3.x" is main); PR for a
    pull-request builder, which has none."""
    if "PullRequest" in tags:
        assert not [t for t in tags if t == "3.x" or t.startswith("3.")]
        return PR
    (tag,) = [t for t in tags if t == "3.x" or t.startswith("3.")]
    return "main" if tag == "3.x" else tag


def _base_name(name: str, branch: str) -> str:
    """The machine a builder belongs to: its name without the branch (or PR) suffix."""
    return name.removesuffix(" PR" if branch == PR else f" {branch}")


def _scrubbed(db: sqlite3.Connection) -> set[int]:
    """The builders whose change data the generator scrubbed (meta, ground truth)."""
    (names,) = db.execute("SELECT value FROM meta WHERE key = 'scrubbed_builders'").fetchone()
    ids = dict(db.execute("SELECT name, id FROM builders"))
    return {ids[n] for n in json.loads(names)}


def _builder_branches(db: sqlite3.Connection) -> dict[int, str]:
    return {
        bid: _branch_of(json.loads(tags))
        for bid, tags in db.execute("SELECT id, tags FROM builders")
    }


def _builds(db: sqlite3.Connection) -> dict[int, list[tuple]]:
    """Per builder id: (number, id, result, started, completed, sorted change ids)."""
    blame: dict[int, list[int]] = {}
    for build_id, change_id in db.execute("SELECT build_id, change_id FROM blamelist"):
        blame.setdefault(build_id, []).append(change_id)
    out: dict[int, list[tuple]] = {}
    for bid, builder, number, result, started, completed in db.execute(
        "SELECT id, builder_id, number, result, started_at, completed_at FROM builds"
        " ORDER BY builder_id, number"
    ):
        out.setdefault(builder, []).append(
            (number, bid, result, started, completed, sorted(blame.get(bid, [])))
        )
    return out


def test_same_seed_gives_identical_tables_and_another_seed_does_not(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    generate(a, seed=11, days=10, builders=25)
    generate(b, seed=11, days=10, builders=25)
    generate(c, seed=12, days=10, builders=25)
    dump_a = _dump(a)
    assert dump_a["builds"], "the window produced no builds"
    assert dump_a == _dump(b)
    assert dump_a["changes"] != _dump(c)["changes"]


def test_meta_records_how_the_history_was_made(small: Path) -> None:
    db = sqlite3.connect(small)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    assert meta["source"] == "generated"
    assert meta["seed"] == "7"
    assert meta["generator_version"] == generator.GENERATOR_VERSION
    assert meta["window_start"] == "2024-01-01T00:00:00Z"
    assert meta["window_end"] == "2024-01-22T00:00:00Z"
    # The warm-up month: builds from 2023-12-01, so a replay from the
    # window's start knows each builder's state.
    warmup = int(meta["warmup_start"])
    assert warmup == 1701388800  # 2023-12-01T00:00:00Z
    first_started = db.execute("SELECT min(started_at) FROM builds").fetchone()[0]
    assert warmup <= first_started < warmup + 86400
    early = db.execute(
        "SELECT count(*) FROM builds b JOIN label_builds l ON l.build_id = b.id"
        " WHERE b.completed_at < 1704067200"
    ).fetchone()[0]
    assert early > 0  # the labels cover the warm-up too


def test_blamelists_partition_each_builders_changes_in_order(small: Path) -> None:
    db = sqlite3.connect(small)
    when = dict(db.execute("SELECT id, when_ts FROM changes"))
    on_branch: dict[str, list[int]] = {}
    for cid, branch in db.execute("SELECT id, branch FROM changes ORDER BY when_ts, id"):
        on_branch.setdefault(branch, []).append(cid)
    branch_of = _builder_branches(db)
    timers = {
        bid: 3600 if "Refleaks" in name else 30
        for bid, name in db.execute("SELECT id, name FROM builders")
    }
    built_branches = set()
    scrubbed = _scrubbed(db)
    for builder, builds in _builds(db).items():
        if branch_of[builder] == PR or builder in scrubbed:
            # A pull request's build holds no change of any branch; a
            # scrubbed builder's builds have lost theirs.
            assert all(not b[5] for b in builds)
            continue
        seen: list[int] = []
        previous_completed = 0.0
        for _number, _bid, _result, started, completed, changes in builds:
            # Builds of one builder run one after the other.
            assert started >= previous_completed
            previous_completed = completed
            # A change is built only after its scheduler's tree-stable timer fired.
            assert all(when[c] + timers[builder] <= started for c in changes)
            seen.extend(changes)
        # Each change of the builder's branch appears in exactly one build,
        # and the builds take them in commit order from the branch's first:
        # the blamelist is "new since the previous build".
        assert seen == on_branch[branch_of[builder]][: len(seen)]
        built_branches.add(branch_of[builder])
    assert "main" in built_branches and len(built_branches) > 1


def test_branch_builders_blame_only_their_branchs_changes(small: Path) -> None:
    db = sqlite3.connect(small)
    branch_of = _builder_branches(db)
    change_branch = dict(db.execute("SELECT id, branch FROM changes"))
    blamed = Counter()
    for builder, change in db.execute(
        "SELECT b.builder_id, l.change_id FROM blamelist l JOIN builds b ON b.id = l.build_id"
    ):
        assert change_branch[change] == branch_of[builder]
        blamed[branch_of[builder]] += 1
    assert blamed["main"] and sum(n for b, n in blamed.items() if b != "main")


def test_every_change_names_its_branch_and_main_has_no_backports(small: Path) -> None:
    db = sqlite3.connect(small)
    names = {b.name for b in branches.BRANCHES}
    rows = db.execute("SELECT branch, title, message, author FROM changes").fetchall()
    assert {branch for branch, *_ in rows} <= names | {"main"}
    main = [r for r in rows if r[0] == "main"]
    assert main and all(not title.startswith("[") for _, title, _, _ in main)
    assert all("cherry picked from commit" not in message for _, _, message, _ in main)
    revisions = dict(db.execute("SELECT revision, branch FROM changes"))
    for branch, title, message, _author in rows:
        if branch == "main":
            continue
        # "[3.13] gh-N: ... (GH-<main PR>) (#<backport PR>)", or a revert of one.
        assert title.startswith((f"[{branch}] ", f'Revert "[{branch}] ')), title
        if title.startswith(f"[{branch}] ") and "(cherry picked from commit " in message:
            picked = message.rsplit("(cherry picked from commit ", 1)[1][:40]
            assert revisions[picked] == "main"  # a backport of a change on main
            assert " (GH-" in title
    bot = [r for r in rows if r[3] == "miss-islington"]
    assert bot and all(branch != "main" for branch, *_ in bot)


def test_builders_are_named_and_tagged_by_branch(small: Path) -> None:
    db = sqlite3.connect(small)
    builders = {
        name: json.loads(tags) for name, tags in db.execute("SELECT name, tags FROM builders")
    }
    main = {n: t for n, t in builders.items() if _branch_of(t) == "main"}
    assert main
    pull_request_builders = 0
    for name, tags in builders.items():
        branch = _branch_of(tags)  # exactly one branch tag, or PullRequest
        if branch == "main":
            continue
        base = _base_name(name, branch)
        assert base != name and base in main
        if branch == PR:
            # "<name> PR": a stable machine's twin, tagged PullRequest instead
            # of "3.x"; none for the slowest variants.
            assert "stable" in tags and "refleak" not in tags and "igmem" not in name.lower()
            assert sorted(tags) == sorted([t for t in main[base] if t != "3.x"] + ["PullRequest"])
            pull_request_builders += 1
            continue
        # The machine's tags, with the branch's in place of "3.x".
        assert sorted(tags) == sorted([t for t in main[base] if t != "3.x"] + [branch])
    fleet_specs = {s.name: s for s in build_fleet(random.Random(7))}
    twins = [
        n
        for n, t in main.items()
        if "stable" in t
        and not (fleet_specs[n].refleak or fleet_specs[n].sanitizer or "bigmem" in n.lower())
    ]
    assert twins and pull_request_builders == len(twins)
    fleet = {s.name: s for s in build_fleet(random.Random(7))}
    for name in main:
        has = {_branch_of(builders[n]) for n in builders if n == name or n.startswith(name + " 3.")}
        has.discard(PR)
        expected = {"main", *branches.builder_branches(fleet[name])}
        assert has == expected, name
        if fleet[name].nogil:
            assert has <= {"main", "3.13"}


def test_no_worker_runs_more_builds_at_once_than_it_may(small: Path) -> None:
    db = sqlite3.connect(small)
    fleet = {s.name: s for s in build_fleet(random.Random(7))}
    branch_of = _builder_branches(db)
    names = {
        bid: _base_name(name, branch_of[bid])
        for bid, name in db.execute("SELECT id, name FROM builders")
    }
    events: dict[str, list[tuple[float, int]]] = {}
    pull_request_builds = 0
    for builder, worker, started, completed in db.execute(
        "SELECT builder_id, worker, started_at, completed_at FROM builds"
    ):
        # A machine's builders on every branch, and its pull-request
        # builder, share its worker's slots.
        assert worker == fleet[names[builder]].worker
        pull_request_builds += branch_of[builder] == PR
        events.setdefault(worker, []).extend([(started, 1), (completed, -1)])
    for worker, evs in events.items():
        limit = next(s.max_builds for s in fleet.values() if s.worker == worker)
        running = peak = 0
        for _, delta in sorted(evs):  # a build ending at t frees its slot before t
            running += delta
            peak = max(peak, running)
        assert peak <= limit, (worker, peak, limit)
    hosts = Counter(fleet[name].worker for name in names.values())
    assert max(hosts.values()) > 1  # the thinned fleet still shares workers
    assert pull_request_builds > 0


def test_pull_request_builds_build_a_pull_request_and_no_change(small: Path) -> None:
    db = sqlite3.connect(small)
    branch_of = _builder_branches(db)
    refs = Counter()
    for builder, branch, changes in db.execute(
        "SELECT b.builder_id, b.branch, (SELECT count(*) FROM blamelist x WHERE x.build_id = b.id)"
        " FROM builds b"
    ):
        if branch_of[builder] == PR:
            # GitHub's merge ref of an unmerged pull request, which the core ignores.
            assert branch.startswith("refs/pull/") and branch.endswith("/merge"), branch
            assert changes == 0
            refs[branch] += 1
        else:
            assert branch == branch_of[builder]
    # A labelled pull request is built on every pull-request builder, and
    # several are labelled in three weeks.
    assert len(refs) >= 5 and max(refs.values()) > 1


def test_a_build_never_starts_before_its_request(small: Path) -> None:
    db = sqlite3.connect(small)
    when = dict(db.execute("SELECT id, when_ts FROM changes"))
    timers = {
        bid: 3600 if "Refleaks" in name else 30
        for bid, name in db.execute("SELECT id, name FROM builders")
    }
    for builder, builds in _builds(db).items():
        for _number, _bid, _result, started, _completed, changes in builds:
            if changes:
                # The request was submitted when the tree-stable timer of the
                # build's newest change fired.
                assert started >= when[max(changes)] + timers[builder]


def test_slow_builders_collapse_several_changes_into_one_build(small: Path) -> None:
    db = sqlite3.connect(small)
    names = dict(db.execute("SELECT id, name FROM builders"))
    branch_of = _builder_branches(db)
    sizes: dict[str, list[int]] = {"refleak": [], "fast": []}
    for builder, builds in _builds(db).items():
        if branch_of[builder] != "main":
            continue  # the branches get fewer changes, so collapse less
        key = "refleak" if "Refleaks" in names[builder] else "fast"
        sizes[key] += [len(b[5]) for b in builds if b[5]]
    mean = {k: sum(v) / len(v) for k, v in sizes.items()}
    assert mean["refleak"] > 1.5 * mean["fast"]
    # Several changes per build is the normal case on a refleak builder.
    assert sum(n > 1 for n in sizes["refleak"]) > 0.4 * len(sizes["refleak"])
    assert sum(n > 1 for n in sizes["fast"]) < 0.2 * len(sizes["fast"])
    assert max(sizes["refleak"]) >= 5


def test_every_non_green_build_is_labelled_and_no_green_one(small: Path) -> None:
    db = sqlite3.connect(small)
    branch_of = _builder_branches(db)
    rows = db.execute(
        "SELECT b.builder_id, b.result, l.cause, l.change_id FROM builds b"
        " LEFT JOIN label_builds l ON l.build_id = b.id"
    ).fetchall()
    causes = Counter(cause for _, _, cause, _ in rows)
    for builder, result, cause, change_id in rows:
        if result in GREEN:
            assert cause is None
        else:
            assert cause in ("breakage", "flake", "infra", "always-red", "pull-request")
            assert (change_id is not None) == (cause == "breakage")
            # Only a pull request's build fails because of the pull request.
            assert (cause == "pull-request") <= (branch_of[builder] == PR)
            if result != 2:
                assert cause == "infra"
    assert causes["breakage"] and causes["flake"] and causes["infra"]


def test_breakage_labels_match_the_builds(small: Path) -> None:
    db = sqlite3.connect(small)
    per_builder = _builds(db)
    revision = dict(db.execute("SELECT id, revision FROM changes"))
    by_revision = {rev: cid for cid, rev in revision.items()}
    messages = db.execute("SELECT id, title, message FROM changes").fetchall()
    pr = dict(db.execute("SELECT id, pr_number FROM changes"))
    branch = dict(db.execute("SELECT id, branch FROM changes"))
    titles = {cid: title for cid, title, _ in messages}
    branch_of = _builder_branches(db)
    labels = db.execute(
        "SELECT change_id, builder_id, broken_at, fixed_at, fixed_by FROM label_breakages"
    ).fetchall()
    assert labels
    on_branches = set()
    scrubbed = _scrubbed(db)
    for change_id, builder, broken_at, fixed_at, fixed_by in labels:
        builds = per_builder[builder]
        red = [b for b in builds if b[4] == broken_at]
        assert red and red[0][2] == 2
        if builder in scrubbed:
            continue  # its builds no longer say which changes they held
        assert branch[change_id] == branch_of[builder]
        on_branches.add(branch[change_id])
        fix_id = None
        if fixed_by == "revert":
            reverts = [
                cid
                for cid, title, message in messages
                if f"This reverts commit {revision[change_id]}." in message
            ]
            assert len(reverts) <= 1
            if reverts:
                fix_id = reverts[0]
                assert titles[fix_id].startswith(f'Revert "{titles[change_id]}" (#')
        else:
            # A fix-forward names the culprit's PR; on a branch, it is the
            # backport of main's fix (naming main's culprit) or a fix of the
            # backport itself.
            prs = [pr[change_id]]
            if "(cherry picked from commit " in (
                message := dict((c, m) for c, _, m in messages)[change_id]
            ):
                picked = message.rsplit("(cherry picked from commit ", 1)[1][:40]
                prs.append(pr[by_revision[picked]])
            fixes = [
                cid
                for cid, t, _ in messages
                if branch[cid] == branch[change_id] and any(f" after #{n} (" in t for n in prs)
            ]
            assert len(fixes) <= 1
            fix_id = fixes[0] if fixes else None
        # The first build that contains the culprit is not green, and neither
        # is any later build until one contains the revert.
        first = next(i for i, b in enumerate(builds) if b[5] and b[5][-1] >= change_id)
        assert change_id in builds[first][5]
        for b in builds[first:]:
            if fix_id is not None and b[5] and b[5][-1] >= fix_id:
                break
            if b[5] or b is builds[first]:
                assert b[2] not in GREEN, (change_id, builder, b)
        assert fixed_at is None or fixed_at > broken_at
        if fixed_at is None and fix_id is not None:
            # Fixed, but this builder built nothing with the fix before the window closed.
            assert all(not b[5] or b[5][-1] < fix_id for b in builds)
    # Backports break their branch's builders too.
    assert "main" in on_branches and len(on_branches) > 1


def test_failure_details_are_realistic_tails(small: Path) -> None:
    db = sqlite3.connect(small)
    register_log_text(db)
    rows = db.execute(
        "SELECT b.result, f.name, log_text(f.log_tail), l.cause FROM failed_steps f"
        " JOIN builds b ON b.id = f.build_id JOIN label_builds l ON l.build_id = b.id"
    ).fetchall()
    failing = [r for r in rows if r[0] == 2]
    assert failing
    for _result, name, tail, _cause in failing:
        assert name in ("Git", "Compile", "Test")
        lines = tail.splitlines()
        assert 5 <= len(lines) <= 80
        assert "program finished with exit code" in tail
    tests = [t for r, n, t, _ in failing if n == "Test" and "Tests result" in t]
    assert any("== Tests result: FAILURE then FAILURE ==" in t for t in tests)
    assert any(line.startswith(("FAIL: ", "ERROR: ")) for t in tests for line in t.splitlines())
    exceptions = [t for r, _, t, _ in rows if r == 4]
    assert all("Connection to the other side was lost" in t for t in exceptions)


def test_a_breaking_change_fails_the_same_way_on_every_build(small: Path) -> None:
    db = sqlite3.connect(small)
    register_log_text(db)
    tails: dict[tuple[int, int], set[str]] = {}
    for builder, change, tail in db.execute(
        "SELECT b.builder_id, l.change_id, log_text(f.log_tail) FROM label_builds l"
        " JOIN builds b ON b.id = l.build_id JOIN failed_steps f ON f.build_id = b.id"
        " WHERE l.cause = 'breakage' AND b.result = 2"
    ):
        failed = [ln for ln in tail.splitlines() if ln.startswith(("FAIL: ", "ERROR: "))]
        # A compile error names its file; its line moves as later changes edit the file.
        errors = [
            re.sub(r"[:(]\d+[,:]\d+\)?$", "", ln.split(": error")[0])
            for ln in tail.splitlines()
            if ": error" in ln
        ]
        tails.setdefault((builder, change), []).append(set(failed + errors))
    assert tails
    # Overlapping causes (another breakage, a machine red for weeks after
    # maintenance) may add lines, but the breakage's own lines are in every
    # build of nearly every streak.
    # (A hang or a killed runner names no test on any build.)
    common = sum(1 for b in tails.values() if set.intersection(*b) or not any(b))
    assert common >= 0.9 * len(tails)


def test_flakes_differ_from_build_to_build(small: Path) -> None:
    db = sqlite3.connect(small)
    register_log_text(db)
    failed = Counter()
    for (tail,) in db.execute(
        "SELECT log_text(f.log_tail) FROM label_builds l"
        " JOIN failed_steps f ON f.build_id = l.build_id"
        " WHERE l.cause = 'flake'"
    ):
        failed.update(ln for ln in tail.splitlines() if " failed:" in ln or "Re-running " in ln)
    assert len(failed) > 3


def test_an_interrupted_generation_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate(path, days=5, builders=30, progress=interrupt, seed=3)
    assert list(tmp_path.iterdir()) == []
    # And an existing history is not touched by a failed regeneration.
    generate(path, days=3, builders=5, seed=3)
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        generate(path, days=5, builders=30, progress=interrupt, seed=4)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]


def test_ensure_shipped_history_regenerates_only_other_versions(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_text("not a history")
    generator.ensure_shipped_history(
        path, days=2, builders=3
    )  # not ours: left for the caller to report
    assert path.read_text() == "not a history"
    path.unlink()
    generate(path, days=2, builders=3, seed=5)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = 'old' WHERE key = 'generator_version'")
    db.commit()
    db.close()
    generator.ensure_shipped_history(path, days=2, builders=3)
    db = sqlite3.connect(path)
    version = db.execute("SELECT value FROM meta WHERE key = 'generator_version'").fetchone()
    assert version == (generator.GENERATOR_VERSION,)
    # A file of this generator but an older schema is made again too.
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    generator.ensure_shipped_history(path, days=2, builders=3)
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    # Its builds hold their blamelists, as the blamelist table has them.
    rows = db.execute("SELECT id, changes FROM builds").fetchall()
    blamed = dict(
        db.execute(
            "SELECT build_id, group_concat(change_id) FROM"
            " (SELECT * FROM blamelist ORDER BY build_id, change_id) GROUP BY build_id"
        ).fetchall()
    )
    assert rows and all(changes == blamed.get(bid) for bid, changes in rows)
    db.close()


def test_labels_without_causes_keep_the_breakages_and_their_culprits(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    generate(path, days=20, builders=30, seed=3)
    store = HistoryStore(path)
    full, culprits_only = store.labels(), store.labels(causes=False)
    store.close()
    assert full.build_causes and full.build_culprits and full.breakages
    assert culprits_only.build_causes == {}
    assert culprits_only.build_culprits == full.build_culprits
    assert culprits_only.breakages == full.breakages


def test_fleet_matches_the_calibrated_group_sizes() -> None:
    fleet = build_fleet(random.Random(1))
    groups = Counter((s.stable, s.tier) for s in fleet)
    # docs/calibration.md, "CPython's fleet": 19+3, 38, 25, 12+1 stable; 9, 19, 16, 14+1 unstable.
    assert groups == {
        (True, 1): 22,
        (True, 2): 38,
        (True, 3): 25,
        (True, None): 13,
        (False, 1): 9,
        (False, 2): 19,
        (False, 3): 16,
        (False, None): 15,
    }
    assert sum(len(v) for v in FLEET.values()) == len(fleet)
    assert len({s.name for s in fleet}) == len(fleet)
    refleak = [s for s in fleet if "Refleaks" in s.name]
    assert len(refleak) >= 10
    assert all(s.tree_stable_timer == 3600 for s in refleak)
    assert all(s.tree_stable_timer == 30 for s in fleet if s not in refleak)
    for s in fleet:
        assert ("stable" in s.tags) == s.stable and ("unstable" in s.tags) != s.stable
        assert (f"tier-{s.tier}" in s.tags) == (s.tier is not None)
    # A flaky FAILURE failed its re-run too: stable builders 0.4-1.5 % of
    # their builds (refleak ones half as much again), unstable ones more.
    stable = sorted(s.flake_rate for s in fleet if s.stable)
    unstable = sorted(s.flake_rate for s in fleet if not s.stable)
    assert 0.0035 <= stable[0] and stable[-1] <= 0.0205
    assert stable[len(stable) // 2] < 0.015 < unstable[len(unstable) // 2]
    # The notoriously flaky few are unstable builders.
    flaky = [s for s in fleet if s.warn_rate >= 0.15]
    assert len(flaky) >= 3 and not any(s.stable for s in flaky)
    assert all(s.flake_rate < s.warn_rate for s in flaky)


def test_the_shipped_year_has_the_promised_size() -> None:
    path = generator.ensure_shipped_history()
    db = sqlite3.connect(path)
    year = 1704067200  # 2024 itself, without the warm-up month
    branch_of = _builder_branches(db)
    builds = Counter(
        branch_of[builder]
        for (builder,) in db.execute(
            "SELECT builder_id FROM builds WHERE completed_at >= ?", (year,)
        )
    )
    # Workers shared by their builders on every branch, one build at a time:
    # about 205,000 builds on main and 190,000 on the branches
    # (history/README.md).
    # Version 6: the pull-request builds share the workers too, so main
    # gets fewer builds (about 157,000) than before (205,000).
    assert sum(builds.values()) >= 250_000
    assert builds["main"] >= 150_000
    assert builds[PR] >= 30_000
    # No builder starves behind its worker's pull-request queue (which is
    # never collapsed, and a worker serves its oldest request first): every
    # main builder builds at least every other week on average, and every
    # pull-request builder nearly every labelled pull request.
    per_builder = Counter(
        builder
        for (builder,) in db.execute(
            "SELECT builder_id FROM builds WHERE completed_at >= ?", (year,)
        )
    )
    assert min(per_builder[b] for b, br in branch_of.items() if br == "main") >= 26
    pr_counts = [per_builder[b] for b, br in branch_of.items() if br == PR]
    assert min(pr_counts) >= 0.95 * max(pr_counts)
    assert {"3.13", "3.12", "3.11"} <= set(builds)
    changes = dict(
        db.execute(
            "SELECT branch, count(*) FROM changes WHERE when_ts >= ? GROUP BY branch", (year,)
        )
    )
    assert 4_000 <= changes["main"] <= 6_000  # about 14 a day
    assert changes["3.12"] > changes["3.11"] > changes["3.10"] > 0
    tags = Counter()
    for (row,) in db.execute("SELECT tags FROM builders"):
        if "3.x" in json.loads(row):
            tags.update(json.loads(row))
    assert tags["3.x"] >= 150 and 90 <= tags["stable"] <= 100 and 55 <= tags["unstable"] <= 65
    assert len(branch_of) > 2 * tags["3.x"]
    results = dict(db.execute("SELECT result, count(*) FROM builds GROUP BY result"))
    assert set(results) == {0, 1, 2, 3, 4, 5, 6}
    labels = db.execute("SELECT count(DISTINCT change_id), count(*) FROM label_breakages")
    breaking, pairs = labels.fetchone()
    assert breaking >= 20 and pairs > breaking
    reverts = db.execute("SELECT count(*) FROM changes WHERE title LIKE 'Revert \"%'").fetchone()
    assert reverts[0] >= 5
