"""The reporter's defaults, stated once for both shells.

The plugin's settings (:mod:`buildbot_revert.plugin.config`) take these when
a ``master.cfg`` leaves an option out, and the simulator's flags start from
the same ones, so a backtest run without flags replays what a freshly
configured reporter would do.  They parameterise the rules of :mod:`.actions`
and :mod:`.grace`.  The policy's own defaults (failures, guards, windows) are
the field defaults of :class:`~.policy.Policy`.
"""

from __future__ import annotations

# Seconds between the comment on the culprit and the revert PR; 0 files at once.
GRACE_PERIOD = 0.0
# At most this many revert PRs in any 24 hours (None: no cap).
DAILY_CAP: int | None = 3
# The label that, on a culprit PR, keeps the reporter off it (None: no label does).
OPT_OUT_LABEL: str | None = "skip-auto-revert"
# Comments that, posted on the culprit PR during the grace period, stop the revert.
OBJECTION_WORDS: tuple[str, ...] = ("/no-revert", "do not revert", "don't revert")
# Who else than the change's author may object or set the opt-out label: a
# user with at least this role on the repository (see core.standing).
OBJECTION_PERMISSION = "write"
# The lines of each failing step's stdio log handed to the core: the plugin
# and the simulator's importer read the same tail, so both see the same evidence.
LOG_TAIL_LINES = 300
# Bisection's caps (the plugin's bisection=True; the simulator's --bisection):
# at most this many changes in the first failing build, all younger than
# this many seconds, and at most this many forced builds in any 24 hours on
# one builder and in all.
BISECTION_MAX_CHANGES = 8
BISECTION_MAX_AGE = 2 * 86400.0
BISECTION_PER_BUILDER_PER_DAY = 6
BISECTION_PER_DAY = 24
# A verification or bisection build not finished this many seconds after it
# was requested never ran (no worker took it, the request was cancelled): the
# held verdict is declined ``unverified`` and the bisection abandoned.  Long
# enough for a busy builder's queue, short enough that a revert still helps.
FORCED_BUILD_TIMEOUT = 6 * 3600.0
