"""Buildbot's change, step and log shapes turned into the core's records.

The plugin reads ``master.data`` at build time; the simulator's importer
reads the REST API of the same master later.  Both see the same field names
(``changeid``, ``when_timestamp``, ``comments``, ``results``, the ``content``
of a log chunk...), so both convert them here, with the same rules, and the
core receives the same records from either shell.  Only the time fields
differ (``datetime`` objects in-process, epoch numbers over REST), and
:func:`epoch` accepts both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from buildbot_revert.core.model import Change, FailedStep, Result
from buildbot_revert.core.references import pr_number_from_title

# The step results whose steps the core sees as failed (as the importer keeps them).
FAILING_STEP_RESULTS = frozenset({int(Result.FAILURE), int(Result.EXCEPTION)})
# The log whose tail is a failed step's evidence.
STDIO_SLUG = "stdio"
# Buildbot's log janitor marks a log whose chunks it deleted with this type.
DELETED_LOG_TYPE = "d"


def epoch(value: Any) -> float:
    """Epoch seconds from a ``datetime`` (data API) or a number (REST API)."""
    if value is None:
        return 0.0
    stamp = getattr(value, "timestamp", None)
    if stamp is not None:
        return float(stamp())
    return float(value)


def change_from_dict(change: Mapping[str, Any]) -> Change:
    """A core :class:`Change` from a Buildbot change entity."""
    message = change.get("comments") or ""
    title = message.strip().splitlines()[0] if message.strip() else ""
    files = change.get("files") or ()
    return Change(
        # A change without a revision still needs a name the ledger can key on.
        revision=change.get("revision") or f"change-{change.get('changeid')}",
        author=change.get("author") or "",
        title=title,
        when=epoch(change.get("when_timestamp")),
        pr_number=pr_number_from_title(title),
        message=message,
        files=tuple(files),
        branch=change.get("branch"),
    )


def is_failed_step(step: Mapping[str, Any]) -> bool:
    """Whether a step entity is one the core should see as failed."""
    results = step.get("results")
    return results is not None and int(results) in FAILING_STEP_RESULTS


def stdio_log(logs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """A step's stdio log entity; None when it has none or its chunks were deleted."""
    log = next((x for x in logs if x.get("slug") == STDIO_SLUG), None)
    if log is None or log.get("type") == DELETED_LOG_TYPE:
        return None
    return log


def tail_window(num_lines: int, lines: int) -> tuple[int, int]:
    """``(offset, limit)`` of the last ``lines`` lines of a log of ``num_lines``."""
    first = max(0, num_lines - lines)
    return first, num_lines - first


def log_text(content: str, log_type: str) -> str:
    """The text of a log chunk; stdio lines lose their one-letter stream prefix."""
    if log_type != "s":
        return content
    return "".join(line[1:] + "\n" for line in content.splitlines())


def failed_step(step: Mapping[str, Any], tail: str | None) -> FailedStep:
    """A core :class:`FailedStep` from a step entity and its stdio tail (None: no log)."""
    return FailedStep(step.get("name") or "", int(step.get("results") or 0), tail)


def failed_steps(
    steps: Iterable[Mapping[str, Any]], tails: Mapping[int, str | None]
) -> tuple[FailedStep, ...]:
    """The failed steps in build order, with the tails keyed by ``stepid``."""
    ordered = sorted((s for s in steps if is_failed_step(s)), key=lambda s: s.get("number", 0))
    return tuple(failed_step(s, tails.get(s["stepid"])) for s in ordered)


def build_branch(stamps: Iterable[tuple[int, str | None]]) -> str | None:
    """A build's branch: that of its first sourcestamp (lowest id) naming one.

    ``stamps`` are ``(sourcestamp id, branch)`` pairs, as the plugin reads
    them from the master's database and the importer from the REST API.
    """
    for _, branch in sorted(stamps, key=lambda stamp: stamp[0]):
        if branch:
            return branch
    return None
