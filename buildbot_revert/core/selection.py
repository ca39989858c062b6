"""Which builders propose reverts: one rule for the plugin and the simulator.

A builder is selected when its name matches the regular expression (when one
is given) and it carries every required tag.  The plugin's ``builders=`` and
``tags=`` settings and the simulator's ``--builders`` and ``--tags`` flags
both make a :class:`BuilderSelection`, so a backtest selects exactly the
builders the deployed reporter would watch.  The builders it leaves out are
still fed to the tracker: their failures are evidence for the guards.
Reading the settings or flags (and their error messages) is each shell's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class BuilderSelection:
    """A builder name pattern and the tags a builder must all carry."""

    # Searched (not matched) in the builder's name; None selects every name.
    pattern: re.Pattern[str] | None = None
    tags: frozenset[str] = frozenset()
    # A builder carrying any of these tags is left out (e.g. ``PullRequest``).
    exclude_tags: frozenset[str] = frozenset()
    # When given, only these builder names (e.g. CPython's list of branch
    # builders), as well as the pattern.
    names: frozenset[str] | None = None

    def keeps(self, name: str, tags: Iterable[str]) -> bool:
        """Whether the builder named ``name``, carrying ``tags``, is selected."""
        if self.pattern is not None and not self.pattern.search(name):
            return False
        if self.names is not None and name not in self.names:
            return False
        carried = set(tags)
        return self.tags <= carried and not (self.exclude_tags & carried)
