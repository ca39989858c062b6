"""buildbot-revert: propose reverts of changes that clearly broke a Buildbot builder.

The package's core (model, policy, tracker, ...) is pure and imports nothing
from Buildbot or Twisted.  ``RevertReporter``, the Buildbot service, is
exported lazily so that ``import buildbot_revert`` (the simulator does it)
never loads Buildbot.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RevertReporter", "__version__"]

# The one place the version is written: setup.py reads it from this file
# (without importing the package), and `simulate --version` from the
# installed package's metadata. CHANGELOG.md says what changed in each.
__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    if name == "RevertReporter":
        from buildbot_revert.plugin.reporter import RevertReporter

        return RevertReporter
    raise AttributeError(f"module 'buildbot_revert' has no attribute {name!r}")
