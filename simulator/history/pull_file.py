"""The history file a pull goes into: its default place, and none left behind by a failed pull.

:func:`pull_into` is the command line's pull (:mod:`simulator.progress`):
it names the per-master file when none is given (:func:`default_history_path`),
creates it and its directories, runs :func:`simulator.history.importer.pull`
into it, and undoes what it made when the pull fails before it stored a build.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from simulator.history import paths
from simulator.history.importer import PullError, PullStats, pull
from simulator.history.rest_client import DEFAULT_CONCURRENCY, BuildbotAPI, api_url
from simulator.history.store import HistoryStore


def default_history_path(url: str) -> Path:
    """The per-master history file in the user's cache directory.

    That is :func:`simulator.history.paths.cache_dir` (``~/.cache/buildbot-revert``
    on Linux, honouring ``$XDG_CACHE_HOME``); the name says which master the
    file holds.
    """
    canonical = api_url(url)
    parts = urlsplit(canonical)
    host = parts.hostname or "master"
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{host}{parts.path.removesuffix('/api/v2')}")
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:8]
    return paths.cache_dir() / f"{readable.strip('_')}-{digest}.sqlite"


def pull_into(
    url: str, history: Path | None, *, concurrency: int = DEFAULT_CONCURRENCY, **options: Any
) -> tuple[Path, PullStats]:
    """Pull ``url`` into ``history`` (default: the per-master cache file), creating it.

    ``options`` are :class:`Importer`'s, as for :func:`pull`.  A pull that
    fails before it stored a build leaves nothing behind that it made: not
    the file, not the directories it created for it.
    """
    path = history if history is not None else default_history_path(url)
    if path.is_dir():
        raise PullError(f"{path}: is a directory, not a history file")
    with BuildbotAPI(url, concurrency=concurrency) as api:
        # Ask the master first: an unreachable or foreign URL must not leave
        # a directory or an empty history file behind.
        api.check()
        made = _make_directories(path.parent)
        existed = path.exists()
        fresh = not existed or path.stat().st_size == 0
        store: HistoryStore | None = None
        try:
            store = HistoryStore(path, create=fresh)
            stats = pull(api, store, **options)
        except BaseException:
            discard = fresh and (store is None or not store.count_builds())
            if store is not None:
                store.close()
            if discard:
                _remove(path, existed, made)
            raise
        store.close()
    return path, stats


def _make_directories(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created, outermost first."""
    missing = []
    for d in (directory, *directory.parents):
        if d.exists():
            break
        missing.append(d)
    missing.reverse()
    made = []
    try:
        for d in missing:
            try:
                d.mkdir()
            except FileExistsError:
                continue  # made meanwhile by someone else: not ours to remove
            made.append(d)
    except OSError as exc:
        _remove(None, True, made)
        raise PullError(f"{directory}: cannot create the directory ({exc.strerror})") from None
    return made


def _remove(path: Path | None, existed: bool, made: list[Path]) -> None:
    """Undo a pull that stored nothing: the file it created, then its new directories."""
    if path is not None and not existed:
        for leftover in (path, path.with_name(path.name + "-journal")):
            leftover.unlink(missing_ok=True)
    for d in reversed(made):
        try:
            d.rmdir()
        except OSError:
            pass  # something else was put there meanwhile: not ours to remove
