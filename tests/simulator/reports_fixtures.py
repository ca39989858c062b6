"""A small hand-made history for the report, sweep and blind-spot tests.

Four builders over about two months, written to a real SQLite history file:

* ``AMD64 Ubuntu``: change ``b`` breaks it for good (a labelled breakage);
  ``Revert "..."`` of ``b`` lands later.  One revert, right, confirmed by
  the later revert.
* ``ARM64 macOS``: change ``d`` breaks it, and ``e``, touching the same file,
  turns it green 26 h after the third failure.  One revert, wrong by the
  labels (``d`` is not labelled), confirmed "fixed in place" by the history.
* the hostile builder: a builder name, author and title full of markup and
  @-mentions; change ``h1`` breaks it and it is still red at the end of the
  window (a revert, proposed: caught).
* ``AMD64 Windows``: its streak's first failing build holds two changes
  (``multiple-changes``), still red at the end.
* ``s390x RHEL``: always red.

With ``guarded=True``, two more builders whose streaks meet the rule but an
evidence guard declines, and build labels for them and for ``AMD64 Ubuntu``:

* ``PPC64LE Fedora``: change ``m`` (its title and author carry bidi and
  control characters) breaks it; the failing builds have no logs, so the
  ``generic-failure`` guard declines: a missed attributable breakage, what
  that guard cost.
* ``x86 Gentoo``: the checkout fails after change ``n`` lands, an
  infrastructure fault the ``infra`` guard declines: what that guard saved.
"""

from __future__ import annotations

import re
from pathlib import Path

from buildbot_revert.core.model import Build, Builder, Change, FailedStep
from simulator.history.store import HistoryStore
from tests.builds_dsl import builds

T0 = 1_704_067_200.0  # 2024-01-01
HOUR = 3600.0
DAY = 86400.0
HOSTILE_BUILDER = "x86 <script>alert(1)</script> | @octocat"
HOSTILE_AUTHOR = "@octocat <img src=x onerror=alert(2)>"
HOSTILE_TITLE = "gh-1: fix | [click](javascript:alert(3)) **bold** @python/core-team"
# Shows as "gh-400: exe.txt" when the right-to-left override is honoured.
CONTROL_TITLE = "gh-400: \u202etxt.exe\u202c \x07\x1b[31m <script>alert(4)</script> \u2067x\u2069"
CONTROL_AUTHOR = "\u200fmallory\u061c\x9b"
MISSED_BUILDER = "PPC64LE Fedora"
INFRA_BUILDER = "x86 Gentoo"
CHECKOUT_FAILED = (
    FailedStep(
        "git",
        2,
        "fatal: unable to access 'https://github.com/python/cpython/': "
        "Could not resolve host: github.com\n",
    ),
)


def compile_error(unit: str) -> tuple[FailedStep, ...]:
    """A failing compile step; each ``unit`` fails in its own way, so that no
    failure looks like one seen earlier elsewhere (the failing-before guard)."""
    return (
        FailedStep(
            "compile",
            2,
            f"gcc -c -o Objects/{unit}.o Objects/{unit}.c\n"
            f"Objects/{unit}.c:10:5: error: 'x' undeclared (first use in this function)\n"
            f"make: *** [Makefile:2: Objects/{unit}.o] Error 1\n",
        ),
    )


COMPILE_ERROR = compile_error("foo")


def _change(rev: str, when: float, title: str, files: tuple[str, ...] = (), **kw: str) -> Change:
    return Change(
        rev * 40 if len(rev) == 1 else rev,
        kw.get("author", f"author-{rev}"),
        title,
        when,
        int(kw["pr"]) if "pr" in kw else None,
        kw.get("message", title),
        files,
    )


def changes() -> dict[str, Change]:
    b = _change(
        "b", T0 + 6 * HOUR, "gh-100: speed up dict lookups", ("Objects/dictobject.c",), pr="101"
    )
    return {
        "a": _change("a", T0, "gh-99: docs", ("Doc/index.rst",)),
        "b": b,
        "c": _change("c", T0 + 2 * DAY, "gh-102: unrelated", ("Lib/os.py",)),
        "r": _change(
            "r",
            T0 + 20 * DAY,
            f'Revert "{b.title}" (#150)',
            ("Objects/dictobject.c",),
            message=f"This reverts commit {b.revision}.",
        ),
        "d": _change(
            "d", T0 + 2.9 * DAY, "gh-200: new parser path", ("Parser/parser.c",), pr="201"
        ),
        "e": _change("e", T0 + 5 * DAY, "gh-200: fix the parser path", ("Parser/parser.c",)),
        "h1": _change("h1", T0 + 9.9 * DAY, HOSTILE_TITLE, author=HOSTILE_AUTHOR),
        "h2": _change("h2", T0 + 10 * DAY, "gh-300: another"),
        "m": _change(
            "m", T0 + 11.9 * DAY, CONTROL_TITLE, ("Python/ceval.c",), author=CONTROL_AUTHOR
        ),
        "n": _change("n", T0 + 14.9 * DAY, "gh-500: docs", ("Doc/whatsnew.rst",)),
    }


def history_builds(guarded: bool = False) -> list[Build]:
    ch = changes()
    out: list[Build] = []
    if guarded:
        out += builds("S:a F:m F F F S", MISSED_BUILDER, T0 + 12 * DAY, ch, 12 * HOUR)
        out += builds("S:a F:n F F S", INFRA_BUILDER, T0 + 15 * DAY, ch, 12 * HOUR)
    # Builds every 12 h; the third failure after "b" completes at T0 + 37 h.
    out += builds("S:a F:b F F F F:c F F", "AMD64 Ubuntu", T0 + HOUR, ch, 12 * HOUR)
    out += builds("S F F F F S:r S", "AMD64 Ubuntu", T0 + 25 * DAY, ch, 12 * HOUR)
    # "d" fails three times 12 h apart from day 3.5, "e" turns it green 26 h
    # after the third failure.
    out += builds("S:a F:d F F", "ARM64 macOS", T0 + 2.5 * DAY, ch, 12 * HOUR)
    out += builds("S:e S", "ARM64 macOS", T0 + 4 * DAY + 26 * HOUR, ch, 12 * HOUR)
    out += builds("S:a F:h1 F F F", HOSTILE_BUILDER, T0 + 9 * DAY, ch, DAY)
    out += builds("S:a F:h2,c F F F", "AMD64 Windows", T0 + 9 * DAY, ch, 2 * DAY)
    out += builds("F:a F F F F", "s390x RHEL", T0 + HOUR, ch, 10 * DAY)
    # Renumber per builder (the DSL restarts at 1) and attach a real log to
    # every failure so that the evidence guards see a compile error.
    numbers: dict[str, int] = {}
    fixed = []
    for b in out:
        numbers[b.builder] = numbers.get(b.builder, 0) + 1
        steps = compile_error(re.sub(r"\W+", "_", b.builder)) if b.result == 2 else ()
        if b.builder == MISSED_BUILDER:
            steps = ()  # no logs: nothing names what failed
        elif b.builder == INFRA_BUILDER and b.result == 2:
            steps = CHECKOUT_FAILED
        fixed.append(b._replace(number=numbers[b.builder], failed_steps=steps))
    return sorted(fixed, key=lambda b: b.completed_at)


def make_history(
    path: Path, *, labels: bool = True, meta: bool = True, guarded: bool = False
) -> Path:
    store = HistoryStore(path, create=True)
    ch = changes()
    names = ["AMD64 Ubuntu", "ARM64 macOS", HOSTILE_BUILDER, "s390x RHEL", "AMD64 Windows"]
    if guarded:
        names += [MISSED_BUILDER, INFRA_BUILDER]
    with store.transaction():
        ids = {
            name: store.writer.add_builder(Builder(name, ("stable",)), master_id=10 + i)
            for i, name in enumerate(names)
        }
        cids = {c.revision: store.writer.add_change(c) for c in ch.values()}
        build_ids = {}
        for b in history_builds(guarded):
            build_ids[b.builder, b.number] = store.writer.add_build(
                ids[b.builder], b, [cids[c.revision] for c in b.changes]
            )
        if labels:
            store.writer.add_breakage(
                cids[ch["b"].revision], ids["AMD64 Ubuntu"], T0 + 13 * HOUR, T0 + 30 * DAY, "revert"
            )
        if labels and guarded:
            store.writer.add_breakage(
                cids[ch["m"].revision], ids[MISSED_BUILDER], T0 + 12.5 * DAY, T0 + 14 * DAY, "fix"
            )
            causes = {
                ("AMD64 Ubuntu", "b"): range(2, 10),
                (MISSED_BUILDER, "m"): range(2, 6),
                (INFRA_BUILDER, None): range(2, 5),
            }
            for (builder, rev), numbers in causes.items():
                for number in numbers:
                    store.writer.add_build_label(
                        build_ids[builder, number],
                        "breakage" if rev else "infra",
                        cids[ch[rev].revision] if rev else None,
                    )
        if meta:
            store.set_meta("master_url", "https://buildbot.example.org")
            store.set_meta("github_repo", "python/cpython")
    store.close()
    return path
