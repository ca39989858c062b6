"""Three wrong reverts the first policy would have proposed, replayed through ``simulate``.

A small history written for this test (issue 12: the patterns behind the
wrong proposals on real CI histories), with ground-truth labels that blame
no change for any of its failures:

* ``AMD64 Ubuntu`` (stable, ``main``): a change touching only the docs lands,
  and the next builds fail ``test_zoneinfo`` (a tzdata update on the
  worker).  The change cannot explain a test failure:
  ``change-cannot-explain``.
* ``AMD64 Debian 3.9`` (stable, a security branch): green, then idle for a
  month; its next build holds one backport about the email package and
  fails ``test_xml_etree`` (a libexpat update meanwhile), as do the next
  two.  The change touched none of the failing tests' code, and the green
  build is a month old: ``stale-green``, which would need a verification
  build.
* ``AMD64 Fedora Rawhide`` (unstable, ``main``): an ordinary change lands
  and this builder alone fails ``test_cppext`` (a setuptools release), while
  the stable builder builds the change green.  It is allowed to fail and
  never proposes alone: ``tolerated-builder``.

For contrast, a change that does break the stable builder (``test_long``,
from a change to ``Objects/longobject.c``) is proposed under both rules.
Under the previous rules (the two new guards off, no builder tolerated)
each of the three is a proposed revert, wrong by the labels; under the
default policy none is proposed, and each streak's verdict is in the JSON
and the Markdown reports.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildbot_revert.core.model import Build, Builder, Change, FailedStep
from buildbot_revert.core.policy import Policy
from simulator.analysis.evaluation import evaluate
from simulator.analysis.replay import Selection, replay
from simulator.cli import main
from simulator.history.store import HistoryStore
from simulator.synthetic.failing_tests import BRANCH_WORLD_TESTS, MAIN_WORLD_TESTS, KnownFailure
from simulator.synthetic.log_tails import Platform
from simulator.synthetic.regrtest_tails import regrtest_tail
from tests.builds_dsl import builds

T0 = 1_704_067_200.0  # 2024-01-01
HOUR = 3600.0
DAY = 86400.0
DOCS = "AMD64 Ubuntu"
IDLE = "AMD64 Debian 3.9"
TOLERATED = "AMD64 Fedora Rawhide"
STABLE = "AMD64 Windows10"  # builds the tolerated builder's change green, then breaks
TAGS = {
    DOCS: ("stable", "3.x"),
    IDLE: ("stable", "3.9"),
    TOLERATED: ("unstable", "3.x"),
    STABLE: ("stable", "3.x"),
}
EXPECTED = {DOCS: "change-cannot-explain", IDLE: "stale-green", TOLERATED: "tolerated-builder"}
# The checks of issue 12 switched off, as the simulator's flags and as a policy.
PREVIOUS_FLAGS = ("--without-guard", "change-cannot-explain", "--without-guard", "stale-green")
PREVIOUS = Policy(
    guards=Policy().guards - {"change-cannot-explain", "stale-green"},
    tolerated_tags=frozenset(),
)


# A real breakage, for contrast: "b" breaks test_long on the stable builder.
BROKEN = KnownFailure(
    "test_long",
    "test.test_long.LongTest.test_huge_str",
    "self.assertEqual(str(n), expected)",
    "AssertionError: '1000' != '10000'",
)


def _test(module: str) -> KnownFailure:
    known = (*MAIN_WORLD_TESTS, *BRANCH_WORLD_TESTS, BROKEN)
    return next(t for t in known if t.module == module)


def _failing(module: str, worker: str, seed: int) -> tuple[FailedStep, ...]:
    """A ``Test`` step failing ``module`` in regrtest's words, as the shipped history has it."""
    rng = random.Random(seed)
    test = _test(module)
    failure = test.failing("fail" if test.exception.startswith("Assertion") else "error", rng)
    tail = regrtest_tail(
        [failure], Platform(worker, False), rng, elapsed=1500.0, makefile_line=2102
    )
    return (FailedStep("Test", 2, tail),)


def _change(rev: str, when: float, title: str, files: tuple[str, ...], branch: str) -> Change:
    return Change(rev * 40, f"author-{rev}", title, when, None, title, files, branch)


def changes() -> dict[str, Change]:
    return {
        "a": _change("a", T0, "gh-1: Fix os.scandir()", ("Lib/os.py",), "main"),
        "d": _change(
            "d",
            T0 + 2 * DAY,
            "Docs: Clarify the datetime docs (#2)",
            ("Doc/library/datetime.rst", "Doc/whatsnew/3.13.rst"),
            "main",
        ),
        "u": _change(
            "u",
            T0 + 5 * DAY + 9 * HOUR,
            "gh-3: Speed up list.sort() (#3)",
            ("Objects/listobject.c", "Lib/test/test_sort.py"),
            "main",
        ),
        "b": _change(
            "b",
            T0 + 8 * DAY,
            "gh-14: Speed up int to str conversion (#14)",
            ("Objects/longobject.c", "Lib/test/test_long.py"),
            "main",
        ),
        "p": _change(
            "p", T0 + 3 * DAY, "[3.9] gh-4: Fix a CVE in tarfile (GH-4) (#5)", ("Lib/tarfile.py",),
            "3.9",
        ),
        "s": _change(
            "s", T0 + 33 * DAY, "[3.9] gh-6: Fix header folding in email (GH-6) (#7)",
            ("Lib/email/_header_value_parser.py", "Lib/test/test_email/test_headers.py"), "3.9",
        ),
        "s2": _change(
            "s2", T0 + 36 * DAY, "[3.9] gh-8: Fix zipfile (GH-8) (#9)",
            ("Lib/zipfile/__init__.py",), "3.9",
        ),
        "s3": _change(
            "s3", T0 + 39 * DAY, "[3.9] gh-10: Fix shlex (GH-10) (#11)", ("Lib/shlex.py",), "3.9"
        ),
        "s4": _change(
            "s4", T0 + 42 * DAY, "[3.9] gh-12: Fix the XML tests for libexpat 2.6 (GH-12) (#13)",
            ("Lib/test/test_xml_etree.py",), "3.9",
        ),
    }  # fmt: skip


def history_builds() -> list[Build]:
    ch = changes()
    out: list[Build] = []
    # Every 6 h on main: green on "a", then "d" alone and two more failing
    # builds, then green again once the worker's tzdata is fixed.
    out += builds("S:a F:d F F S", DOCS, T0 + 2 * DAY + HOUR, ch, 6 * HOUR)
    # The unstable builder fails test_cppext from the build holding "u" on;
    # the stable one builds "u" green, then "b" really breaks it.
    out += builds("S:a S:d F:u F F S", TOLERATED, T0 + 5 * DAY, ch, 6 * HOUR)
    out += builds("S:a S:d S:u", STABLE, T0 + 5 * DAY + HOUR, ch, 6 * HOUR)
    out += builds("F:b F F", STABLE, T0 + 8 * DAY + HOUR, ch, 6 * HOUR)
    # The security branch: green on "p", idle for a month, then "s", "s2",
    # "s3" each fail the XML tests, and the fix of the tests ("s4") is green.
    out += builds("S:p", IDLE, T0 + 3 * DAY + HOUR, ch, DAY)
    out += builds("F:s F:s2 F:s3 S:s4", IDLE, T0 + 33 * DAY + HOUR, ch, 3 * DAY)
    logs = {DOCS: "test_zoneinfo", TOLERATED: "test_cppext", IDLE: "test_xml_etree"}
    numbers: dict[str, int] = {}
    fixed = []
    for b in out:
        numbers[b.builder] = numbers.get(b.builder, 0) + 1
        steps: tuple[FailedStep, ...] = ()
        if b.result == 2:
            steps = _failing(logs.get(b.builder, "test_long"), b.builder, numbers[b.builder])
        branch = "3.9" if b.builder == IDLE else "main"
        fixed.append(
            b._replace(
                number=numbers[b.builder], failed_steps=steps, branch=branch, worker=b.builder
            )
        )
    return sorted(fixed, key=lambda b: b.completed_at)


def make_history(path: Path) -> Path:
    """The history, with labels: "b" broke the stable builder, the world everything else."""
    store = HistoryStore(path, create=True)
    broken = changes()["b"]
    with store.transaction():
        ids = {name: store.writer.add_builder(Builder(name, tags)) for name, tags in TAGS.items()}
        cids = {c.revision: store.writer.add_change(c) for c in changes().values()}
        for b in history_builds():
            build_id = store.writer.add_build(
                ids[b.builder], b, [cids[c.revision] for c in b.changes]
            )
            if b.result == 2 and b.builder == STABLE:
                store.writer.add_build_label(build_id, "breakage", cids[broken.revision])
            elif b.result == 2:
                store.writer.add_build_label(build_id, "infra", None)
        first = T0 + 8 * DAY + HOUR
        store.writer.add_breakage(cids[broken.revision], ids[STABLE], first, None, "revert")
    store.close()
    return path


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return make_history(tmp_path / "wrong-reverts.sqlite")


def simulate(history: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--history", str(history), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _verdicts(doc: dict) -> dict[str, str]:
    """Each builder's verdict on its red streak (one streak each)."""
    return {s["builder"]: s["reason"] for s in doc["streaks"] if s["builds"] >= 3}


def test_none_is_proposed_and_each_has_its_verdict_in_the_json(history: Path) -> None:
    doc = json.loads(simulate(history, "--format", "json"))
    assert [r["builder"] for r in doc["reverts"]] == [STABLE]  # the real breakage only
    assert _verdicts(doc) == {**EXPECTED, STABLE: "revert"}
    by_reason = doc["summary"]["by_reason"]
    for reason in EXPECTED.values():
        assert by_reason[reason] == 1
    assert (doc["evaluation"]["true_positives"], doc["evaluation"]["false_positives"]) == (1, 0)
    assert doc["guards"]["change-cannot-explain"]["flakes_or_infra"] == 1
    assert doc["guards"]["stale-green"]["flakes_or_infra"] == 1
    explanations = {s["builder"]: s["explanation"] for s in doc["streaks"]}
    assert "Doc/library/datetime.rst" in explanations[DOCS]
    assert "30 days ago" in explanations[IDLE]


def test_each_verdict_is_in_the_markdown_report(history: Path) -> None:
    md = simulate(history, "--format", "markdown")
    assert "| revert pull requests | 1 |" in md
    proposals = md.split("## Proposed reverts\n", 1)[1].split("\n## ", 1)[0]
    assert "gh-14: Speed up int to str conversion" in proposals
    assert "Objects/longobject.c, Lib/test/test\\_long.py" in proposals
    for title in ("Docs: Clarify", "Fix header folding", "Speed up list.sort()"):
        assert title not in proposals
    verdicts = md.split("## Verdicts\n", 1)[1].split("\n## ", 1)[0]
    blind = md.split("## Blind spots\n", 1)[1]
    for reason in EXPECTED.values():
        assert f"| `{reason}` | 1 | 1 |" in verdicts
    assert "| `change-cannot-explain` | 1 | 1 | 18 |" in blind
    assert "| `stale-green` (would need a verification build) | 1 | 1 | 216 |" in blind
    assert "| `tolerated-builder` | 1 | 1 | 18 |" in blind
    assert "tolerated, never proposing alone: those tagged unstable (1)" in md


def test_under_the_previous_rules_each_would_have_been_a_wrong_revert(history: Path) -> None:
    # The two new guards off, through the simulator's flags: the docs-only
    # change and the backport after a month are proposed, with what the
    # reports say of each.
    doc = json.loads(simulate(history, "--format", "json", *PREVIOUS_FLAGS))
    reverts = {r["builder"]: r for r in doc["reverts"]}
    assert set(reverts) == {DOCS, IDLE, STABLE}
    assert reverts[DOCS]["files"] == ["Doc/library/datetime.rst", "Doc/whatsnew/3.13.rst"]
    assert reverts[DOCS]["last_green_age_hours"] == 6.0
    assert reverts[IDLE]["last_green_age_hours"] == 30 * 24.0
    assert (doc["evaluation"]["true_positives"], doc["evaluation"]["false_positives"]) == (1, 2)
    md = simulate(history, "--format", "markdown", *PREVIOUS_FLAGS)
    assert "| Doc/library/datetime.rst, Doc/whatsnew/3.13.rst | 6 h |" in md
    assert "| 30 days |" in md
    # And with no builder tolerated (a policy setting), the unstable builder
    # proposes its change alone: three wrong reverts out of three.
    store = HistoryStore(history)
    try:
        result = replay(store, PREVIOUS, Selection())
        evaluation = evaluate(result, store.labels())
    finally:
        store.close()
    proposed = {p.request.builder: p.request.change.revision for p in result.proposals()}
    revisions = {k: changes()[k].revision for k in ("d", "s", "u", "b")}
    assert proposed == {
        DOCS: revisions["d"],
        IDLE: revisions["s"],
        TOLERATED: revisions["u"],
        STABLE: revisions["b"],
    }
    assert (evaluation.true_positives, evaluation.false_positives) == (1, 3)
