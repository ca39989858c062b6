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
from collections.abc import Callable, Mapping


def line_key(repository: str, branch: str | None, codebase: str, project: str) -> str:
    """The line a change or sourcestamp belongs to, as a stable string."""
    return json.dumps([repository or "", branch, codebase or "", project or ""])


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
    blamed: list[int] = []
    after = dict(previous)
    for line in sorted(tips):
        tip = tips[line]
        prev = previous.get(line)
        if prev is None:
            blamed.append(tip)
        elif tip > prev:
            blamed.extend(between(line, prev, tip))
        after[line] = tip if prev is None else max(prev, tip)
    return blamed, after
