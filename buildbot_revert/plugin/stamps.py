"""A build request's sourcestamps as the gatherer reads them, and what is read ahead.

The rows of the gatherer's sourcestamps statement (one per change of each
sourcestamp of the request's buildset) make a build's tips, branch and
verification mark (:func:`stamps_of`), whether the gatherer reads them for
one build or :mod:`.history` for a batch; :class:`Preloaded` is what a
batch hands the gatherer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa

from buildbot_revert.core import blamelist, records
from buildbot_revert.core.model import FailedStep
from buildbot_revert.core.verification import PROPERTY


def verification_reason(stored: str) -> str:
    """A buildset property's value as stored (JSON ``[value, source]``), as text."""
    try:
        value = json.loads(stored)
    except ValueError:
        return stored
    if isinstance(value, list) and value:
        value = value[0]
    return str(value)


# A build request's sourcestamps: ``({line: tip change id}, branch, verification mark)``.
StampsOf = tuple[dict[str, int], str | None, str | None]


class Preloaded(NamedTuple):
    """What a batch of builds needs, read ahead (:mod:`.history`): each used once.

    ``stamps`` by build request id, ``steps`` (the failed steps with their
    tails) by build id, ``changes`` (change entities) by change id,
    ``previous`` (the tips of a builder's last ordinary build before the
    batch) by builder id.
    """

    stamps: dict[int, StampsOf]
    steps: dict[int, tuple[FailedStep, ...]]
    changes: dict[int, dict[str, Any]]
    previous: dict[int, dict[str, int]]


def stamps_of(rows: Iterable[Any]) -> StampsOf:
    """A build request's rows of :func:`stamps_select`, as its sourcestamps."""
    rows = list(rows)
    tips = blamelist.newest_per_line(
        (
            blamelist.line_key(
                row.repository or "", row.branch, row.codebase or "", row.project or ""
            ),
            row.changeid,
        )
        for row in rows
        if row.changeid is not None
    )
    # A sourcestamp with two changes (one revision added twice) is
    # one row per change: its branch counts once either way.
    stamps = {(row.ss_id, row.ss_branch) for row in rows if row.ss_id is not None}
    marked = rows[0].marked if rows else None
    return (
        tips,
        records.build_branch(stamps),
        None if marked is None else verification_reason(marked),
    )


def stamps_select(model: Any) -> sa.Select[Any]:
    """The select of a build request's sourcestamps; the caller adds which requests.

    A row per change of each of the request's buildset's sourcestamps (a
    sourcestamp without a change is one row of NULL change columns; a
    buildset without a sourcestamp, one row of NULLs), each with the
    buildset's verification mark; ``model`` is the master's ``db.model``.
    """
    br, bss = model.buildrequests, model.buildset_sourcestamps
    ch, ss, props = model.changes, model.sourcestamps, model.buildset_properties
    marked = (
        sa.select(props.c.property_value)
        .where(props.c.buildsetid == br.c.buildsetid, props.c.property_name == PROPERTY)
        .limit(1)
        .scalar_subquery()
    )
    return sa.select(
        ss.c.id.label("ss_id"),
        ss.c.branch.label("ss_branch"),
        ch.c.changeid,
        ch.c.repository,
        ch.c.branch,
        ch.c.codebase,
        ch.c.project,
        marked.label("marked"),
    ).select_from(
        br.outerjoin(bss, bss.c.buildsetid == br.c.buildsetid)
        .outerjoin(ss, ss.c.id == bss.c.sourcestampid)
        .outerjoin(ch, ch.c.sourcestampid == ss.c.id)
    )
