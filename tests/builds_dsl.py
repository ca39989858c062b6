"""A tiny notation for hand-written build sequences in tests.

``builds("S:a F:b F F", builder="B")`` is four builds of builder ``B``: a
SUCCESS holding change ``a``, a FAILURE holding ``b``, then two FAILUREs with
no new changes.  Letters are result codes (S SUCCESS, W WARNINGS, F FAILURE,
K SKIPPED, X EXCEPTION, R RETRY, C CANCELLED); ``:a,b`` lists the blamelist;
``@name`` gives the build the failed steps ``logs[name]``.
Builds are ten minutes apart, starting at ``start``.
"""

from __future__ import annotations

from buildbot_revert.core.model import Build, Change, FailedStep, Result

LETTERS = {
    "S": Result.SUCCESS,
    "W": Result.WARNINGS,
    "F": Result.FAILURE,
    "K": Result.SKIPPED,
    "X": Result.EXCEPTION,
    "R": Result.RETRY,
    "C": Result.CANCELLED,
}
STEP = 600.0


def change(rev: str, when: float = 0.0, title: str | None = None, message: str = "") -> Change:
    return Change(
        revision=rev,
        author=f"author-of-{rev}",
        title=title if title is not None else f"gh-1: change {rev}",
        when=when,
        message=message,
    )


def builds(
    spec: str,
    builder: str = "B",
    start: float = 1_700_000_000.0,
    changes: dict[str, Change] | None = None,
    step: float = STEP,
    logs: dict[str, tuple[FailedStep, ...]] | None = None,
) -> list[Build]:
    known = changes or {}
    out = []
    for i, token in enumerate(spec.split()):
        token, _, log = token.partition("@")
        letter, _, revs = token.partition(":")
        t = start + i * step
        blame = tuple(known.get(r) or change(r, when=t - 60) for r in revs.split(",") if r)
        steps = (logs or {})[log] if log else ()
        out.append(Build(builder, i + 1, int(LETTERS[letter]), t - step / 2, t, blame, steps))
    return out
