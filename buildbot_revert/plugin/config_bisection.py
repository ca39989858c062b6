"""The ``bisection=`` option: off, the default caps, or a dict of caps.

Kept apart from :mod:`.config` (which re-exports :class:`BisectionSettings`)
because it is one option with its own record and rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.plugin.config_errors import SettingsError, positive_number, whole_number


@dataclass(frozen=True)
class BisectionSettings:
    """Bisection's caps (``bisection={...}`` in master.cfg; None: no bisection).

    Only first failing builds of at most ``max_changes`` changes are
    bisected, and only when their changes are at most ``max_age`` seconds
    old; at most ``per_builder_per_day`` builds on one builder and
    ``per_day`` in all are requested in any 24 hours.
    """

    max_changes: int = defaults.BISECTION_MAX_CHANGES
    per_builder_per_day: int = defaults.BISECTION_PER_BUILDER_PER_DAY
    per_day: int = defaults.BISECTION_PER_DAY
    max_age: float = defaults.BISECTION_MAX_AGE


_BISECTION_KEYS = ("max_changes", "per_builder_per_day", "per_day", "max_age")


def bisection_settings(value: Any) -> BisectionSettings | None:
    """``None``/``False`` (off), ``True`` (the default caps) or a dict of caps."""
    if value is None or value is False:
        return None
    if value is True:
        return BisectionSettings()
    if not isinstance(value, Mapping):
        raise SettingsError("bisection must be True, None or a dict of its caps")
    unknown = sorted(set(value) - set(_BISECTION_KEYS))
    if unknown:
        raise SettingsError(
            f"bisection has unknown settings: {', '.join(unknown)}; "
            f"known: {', '.join(_BISECTION_KEYS)}"
        )
    counts = {
        k: whole_number(f"bisection {k}", v, low=1) for k, v in value.items() if k != "max_age"
    }
    if counts.get("max_changes", 2) < 2:
        raise SettingsError("bisection max_changes must be at least 2")
    age = value.get("max_age")
    if age is None:
        return BisectionSettings(**counts)
    return BisectionSettings(**counts, max_age=positive_number("bisection max_age", age))
