"""Blamelists from Buildbot's change ids: what is new in one build.

A build's blamelist is the changes new since the previous completed build of
the same builder.  Buildbot does not store that list, so both shells derive
it the same way (the simulator's importer from the REST API, the plugin from
``master.data``), by these rules, which this module holds so that the two
cannot drift apart:

* A change belongs to a *line*: its (repository, branch, codebase, project).
  Change ids only grow, so on one line they are in landing order.
* A build's *tip* on a line is the newest change of the sourcestamp it built
  (a collapsed build request still points at its newest change).  A build
  with no change behind it (a forced build) has no tip.
* The blamelist on a line is every change of that line with
  ``previous tip < changeid <= tip``, where the previous tip is the highest
  tip the builder has reached on that line; a builder's first build blames
  only its own tip; a rebuild of an older revision blames nothing and does
  not move the tip back.
* Lines are taken in sorted order, ids ascending within a line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def line_key(repository: str, branch: str | None, codebase: str, project: str) -> str:
    """The line a change or sourcestamp belongs to, as a stable string."""
    return json.dumps([repository or "", branch, codebase or "", project or ""])


def change_line(change: Mapping[str, Any]) -> str:
    """The line of a change entity (or anything with its four line fields)."""
    return line_key(
        change.get("repository") or "",
        change.get("branch"),
        change.get("codebase") or "",
        change.get("project") or "",
    )


def newest_per_line(changes: Iterable[tuple[str, int]]) -> dict[str, int]:
    """``{line: highest change id}`` of ``(line, changeid)`` pairs: a build's tips."""
    tips: dict[str, int] = {}
    for line, changeid in changes:
        tips[line] = max(changeid, tips.get(line, changeid))
    return tips


def ranges(previous: Mapping[str, int], tips: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """``{line: (after, upto)}``: the id ranges :func:`blame` lists with ``between``."""
    return {
        line: (previous[line], tip)
        for line, tip in tips.items()
        if line in previous and tip > previous[line]
    }


def advance(previous: Mapping[str, int], tips: Mapping[str, int]) -> dict[str, int]:
    """The builder's tips after a build: never moved back by a rebuild of older changes."""
    after = dict(previous)
    for line, tip in tips.items():
        after[line] = max(tip, previous.get(line, tip))
    return after


def blame(
    previous: Mapping[str, int],
    tips: Mapping[str, int],
    between: Callable[[str, int, int], list[int]],
) -> tuple[list[int], dict[str, int]]:
    """The change ids new in a build, and the builder's tips after it.

    ``previous`` holds the builder's tips before this build, ``tips`` this
    build's; ``between(line, after, upto)`` lists the ids of ``line`` in
    ``(after, upto]``, ascending.
    """
    wanted = ranges(previous, tips)
    blamed: list[int] = []
    for line in sorted(tips):
        if line not in previous:
            blamed.append(tips[line])
        elif line in wanted:
            blamed.extend(between(line, *wanted[line]))
    return blamed, advance(previous, tips)
