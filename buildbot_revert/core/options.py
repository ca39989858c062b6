"""Settings declared once: each option's name, default, check and one line of documentation.

An :class:`Option` is one row of the table every consumer reads: the
reporter's validation (and so ``buildbot checkconfig``'s errors) runs each
row's check in the table's order; the documentation's option table lists the
rows; :func:`machine_settings` reads the rows marked ``machine`` into the
post-verdict machine's :class:`~buildbot_revert.core.machine_io.MachineSettings`.

The rows both shells share (the post-verdict machine's settings) are declared
here, in the pure core (:data:`MACHINE_OPTIONS`); the options only the plugin
takes (its repository, token, mode, webhooks...) are declared in the plugin
with the same record (:mod:`buildbot_revert.plugin.options`).

A check answers with a problem sentence (shown to the user as is, naming the
option) or None; it sees the options accepted before it, for the rules that
join two options (a mode that needs a token).  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.machine_io import BisectionCaps, MachineSettings
from buildbot_revert.core.outcomes import StandDown

# name, value, the options accepted before it -> a problem sentence, or None.
Check = Callable[[str, Any, Mapping[str, Any]], "str | None"]


def same(value: Any) -> Any:
    """The value kept is the value given."""
    return value


@dataclass(frozen=True)
class Option:
    """One setting: its name, default, check and what it does (one line, Markdown)."""

    name: str
    default: Any
    doc: str
    check: Check
    # The value kept once the check accepted it (seconds as a float, a list as a tuple...).
    convert: Callable[[Any], Any] = same
    # Read into the post-verdict machine's settings (:func:`machine_settings`).
    machine: bool = False


def seconds_problem(name: str, value: Any, *, allow_zero: bool = False) -> str | None:
    """``value`` is a number of seconds, positive (or zero when ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} must be a number of seconds, not {type(value).__name__}"
    if value < 0 or (value == 0 and not allow_zero):
        return f"{name} must be {'zero or ' if allow_zero else ''}positive"
    return None


def whole_problem(name: str, value: Any, *, low: int) -> str | None:
    """``value`` is a whole number of at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        return f"{name} must be a whole number of at least {low}"
    return None


def true_or_false(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """An option that is True or False, nothing else (not 0, 1 or "yes")."""
    return None if isinstance(value, bool) else f"{name} must be True or False"


def seconds(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A positive number of seconds."""
    return seconds_problem(name, value)


def _seconds_or_zero(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """Zero or a positive number of seconds."""
    return seconds_problem(name, value, allow_zero=True)


def _daily_cap(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A positive whole number, or None for no cap."""
    if value is None or (not isinstance(value, bool) and isinstance(value, int) and value >= 1):
        return None
    return f"{name} must be a positive whole number, or None for no cap"


def _stand_down(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """One of :class:`StandDown`'s values."""
    if value in {s.value for s in StandDown}:
        return None
    choices = ", ".join(repr(s.value) for s in StandDown)
    return f"{name} must be one of {choices}, not {value!r:.30}"


BISECTION_KEYS = ("max_changes", "per_builder_per_day", "per_day", "max_age")


def _bisection(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """``None``/``False`` (off), ``True`` (the default caps) or a dict of caps."""
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, Mapping):
        return f"{name} must be True, None or a dict of its caps"
    unknown = sorted(set(value) - set(BISECTION_KEYS))
    if unknown:
        known = ", ".join(BISECTION_KEYS)
        return f"{name} has unknown settings: {', '.join(unknown)}; known: {known}"
    for key, cap in value.items():
        if key != "max_age":
            problem = whole_problem(f"{name} {key}", cap, low=1)
            if problem is not None:
                return problem
    if value.get("max_changes", 2) < 2:
        return f"{name} max_changes must be at least 2"
    age = value.get("max_age")
    return None if age is None else seconds_problem(f"{name} max_age", age)


def _bisection_caps(value: Any) -> BisectionCaps | None:
    """The caps of an accepted ``bisection`` value (None: off)."""
    if value is None or value is False:
        return None
    if value is True:
        return BisectionCaps()
    caps = dict(value)
    if caps.get("max_age") is not None:
        caps["max_age"] = float(caps["max_age"])
    else:
        caps.pop("max_age", None)
    return BisectionCaps(**caps)


# The post-verdict machine's settings, as both shells take them.
MACHINE_OPTIONS: tuple[Option, ...] = (
    Option(
        "grace_period",
        defaults.GRACE_PERIOD,
        "seconds between the comment on the culprit's pull request and the revert; 0 files at "
        "once (see [grace periods](operating.md#grace-periods))",
        _seconds_or_zero,
        float,
        machine=True,
    ),
    Option(
        "daily_cap",
        defaults.DAILY_CAP,
        "at most this many revert pull requests in any 24 hours (`None`: no cap)",
        _daily_cap,
        machine=True,
    ),
    Option(
        "verification",
        False,
        "build the suspect's parent on the failing builder before filing; file only if it passes",
        true_or_false,
        machine=True,
    ),
    Option(
        "stand_down",
        StandDown.CLOSE.value,
        "once a fix made a revert pull request unnecessary: `close` it, `mark` it with a label, "
        "or only `comment`",
        _stand_down,
        StandDown,
        machine=True,
    ),
    Option(
        "close_touched",
        False,
        "close such a pull request even when someone else commented on, reviewed or pushed to it",
        true_or_false,
        machine=True,
    ),
    Option(
        "forced_build_timeout",
        defaults.FORCED_BUILD_TIMEOUT,
        "seconds after which a verification or bisection build not finished is taken to have "
        "never run (the verdict is declined `unverified`)",
        seconds,
        float,
        machine=True,
    ),
    Option(
        "bisection",
        None,
        "`True` or a dict of caps (`max_changes`, `per_builder_per_day`, `per_day`, `max_age`): "
        "bisect a first failing build of several changes with forced builds",
        _bisection,
        _bisection_caps,
        machine=True,
    ),
)


def named(options: Iterable[Option], name: str) -> Option:
    """The option called ``name``."""
    for option in options:
        if option.name == name:
            return option
    raise KeyError(name)


def machine_settings(options: Iterable[Option], values: Mapping[str, Any]) -> MachineSettings:
    """The machine's settings: the accepted value of every option marked ``machine``."""
    return MachineSettings(**{o.name: values[o.name] for o in options if o.machine})
