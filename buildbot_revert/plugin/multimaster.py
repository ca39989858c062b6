"""Several masters: whether this master's reporter sees every master's builds.

In Buildbot's multi-master setup (``c['multiMaster'] = True``, one shared
database) every master runs its own reporter.  Each reporter feeds its
tracker from the ``('builds', None, 'finished')`` events its master's
message queue delivers.  With a WAMP router (``c['mq'] = {'type': 'wamp',
...}``, Crossbar.io) that queue carries every master's events, so every
reporter sees every build of every builder, in the order the router passed
them on: the same for all, so each tracker reaches the same verdicts, and
the ledger's unique key on the revision lets exactly one master act on each.

With the default ``simple`` queue a master hears only its own builds: a
builder whose builds alternate between masters shows each reporter only
part of its streak (three failures spread over two masters are two and one,
and never a revert).  Nothing fails, so this says so once, when the
reporter starts (:func:`split_streaks_warning`).
"""

from __future__ import annotations

from typing import Any

WAMP = "wamp"


def split_streaks_warning(config: Any) -> str | None:
    """The one log line for a multi-master config without a shared queue, else None.

    ``config`` is the master's ``MasterConfig`` (``multiMaster``, ``mq``),
    untyped: read with ``getattr`` as far as it goes.
    """
    if not getattr(config, "multiMaster", False):
        return None
    mq = getattr(config, "mq", None) or {}
    kind = str(mq.get("type", "simple"))
    if kind == WAMP:
        return None
    return (
        f"buildbot-revert: WARNING: c['multiMaster'] is set but c['mq'] is {kind!r}, not "
        f"{WAMP!r}: this master's reporter sees only the builds this master ran, so a red "
        "streak whose builds ran on several masters may be split between them and never "
        "judged whole (no revert, or a late one); run a WAMP router (Crossbar.io) and set "
        "c['mq'] = {'type': 'wamp', 'router_url': 'ws://HOST:PORT/ws', 'realm': 'realm1'} "
        "on every master (see docs/operating.md, 'Several masters')"
    )
