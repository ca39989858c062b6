"""The error a bad reporter setting raises, and the number checks several options share.

Apart from :mod:`.config` (which re-exports :class:`SettingsError`) so that
the modules reading one option each (:mod:`.config_bisection`) use them too.
"""

from __future__ import annotations

from typing import Any


class SettingsError(ValueError):
    """A reporter setting that cannot work (the message is shown to the user as is)."""


def positive_number(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as seconds, positive (or zero when ``allow_zero``), else a SettingsError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if value < 0 or (value == 0 and not allow_zero):
        raise SettingsError(f"{name} must be {'zero or ' if allow_zero else ''}positive")
    return float(value)


def whole_number(name: str, value: Any, *, low: int) -> int:
    """``value`` as a whole number of at least ``low``, else a SettingsError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SettingsError(f"{name} must be a whole number of at least {low}")
    return value
