"""Where the simulator keeps the files it makes: per user, never beside its code.

An installed package lives in site-packages, which the user may not be
allowed to write and which an upgrade or uninstall replaces; so nothing is
ever written next to the code, for a plain install and an editable checkout
alike.

* The shipped history, generated on first use, goes into the per-user data
  directory (``~/.local/share/buildbot-revert`` on Linux, honouring
  ``$XDG_DATA_HOME``; ``~/Library/Application Support/buildbot-revert`` on
  macOS; ``%LOCALAPPDATA%\\buildbot-revert`` on Windows), or into the
  directory named by ``$BUILDBOT_REVERT_DATA``.
* Histories pulled from a master go into the per-user cache directory
  (``~/.cache/buildbot-revert``, honouring ``$XDG_CACHE_HOME``, on Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "buildbot-revert"
# A directory that replaces the per-user data directory.
DATA_ENV = "BUILDBOT_REVERT_DATA"
SHIPPED_HISTORY_NAME = "cpython-2024.sqlite"


def data_dir() -> Path:
    """The directory of the shipped history: ``$BUILDBOT_REVERT_DATA`` or the user's."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def shipped_history() -> Path:
    """Where the shipped 2024 history is (or will be generated)."""
    return data_dir() / SHIPPED_HISTORY_NAME


def cache_dir() -> Path:
    """The directory of the per-master histories that ``simulate pull`` makes."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
