"""Settings declared once: each option's name, default, check and one line of documentation.

An :class:`Option` is one row of the table every consumer reads: the
reporter's validation (and so ``buildbot checkconfig``'s errors) runs each
row's check in the table's order (:func:`accept`); the documentation's
option table lists the rows; the simulator offers the rows that carry a
:class:`Flag` as ``simulate`` flags; the machine's settings are read from the
accepted values.

The rows both shells share, the post-verdict machine's settings, are the
fields of :class:`~buildbot_revert.core.machine_io.MachineSettings`, each
declared with :func:`setting` (its ``Option`` rides in the field's metadata,
read back by :func:`declared`); the options only the plugin takes (its
repository, token, mode, webhooks...) are declared in the plugin with the
same record (:mod:`buildbot_revert.plugin.options`).

A check answers with a problem sentence (shown to the user as is, naming the
option) or None; it sees the options accepted before it, for the rules that
join two options (a mode that needs a token).  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from typing import Any, Literal

from buildbot_revert.core.outcomes import StandDown
from buildbot_revert.core.policy import Policy

# name, value, the options accepted before it -> a problem sentence, or None.
Check = Callable[[str, Any, Mapping[str, Any]], "str | None"]
# The key of a dataclass field's metadata that holds its Option.
OPTION = "option"


class OptionProblem(ValueError):
    """An option's value its check refused (the message names the option)."""


def same(value: Any) -> Any:
    """The value kept is the value given."""
    return value


@dataclass(frozen=True)
class Flag:
    """How ``simulate`` offers an option: its help, and its spelling when not ``--the-name``.

    ``switch``: on when given (the value True); ``duration``: ``24h``, ``7d``...
    read as seconds, the default when not given; ``value``: a value of the
    default's type, the default shown; ``count``: a whole number or ``none``
    (the option's None), the default when not given.
    """

    help: str
    spelling: str | None = None
    kind: Literal["switch", "duration", "value", "count"] = "value"
    metavar: str | None = None


@dataclass(frozen=True)
class Option:
    """One setting: its name, default (as a user writes it), check and what it does (Markdown)."""

    name: str
    default: Any
    doc: str
    check: Check
    # The value kept once the check accepted it (seconds as a float, a list as a tuple...).
    convert: Callable[[Any], Any] = same
    # How the simulator offers it (None: it does not).
    flag: Flag | None = None

    @property
    def spelling(self) -> str:
        """The simulator's flag for it."""
        given = self.flag.spelling if self.flag is not None else None
        return given or "--" + self.name.replace("_", "-")


def setting(
    default: Any,
    doc: str,
    check: Check,
    convert: Callable[[Any], Any] = same,
    flag: Flag | None = None,
) -> Any:
    """A dataclass field declared as an option: its default is ``convert(default)``."""
    option = Option(name="", default=default, doc=doc, check=check, convert=convert, flag=flag)
    return field(default=convert(default), metadata={OPTION: option})


def declared(record: type) -> tuple[Option, ...]:
    """The options of a dataclass whose fields were declared with :func:`setting`, in order."""
    found: tuple[Field[Any], ...] = fields(record)
    return tuple(replace(f.metadata[OPTION], name=f.name) for f in found if OPTION in f.metadata)


def accept(options: Iterable[Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option's value (its default when not given), checked in order, then converted.

    Raises :class:`OptionProblem` with the first problem a check finds.
    """
    values: dict[str, Any] = {}
    for option in options:
        value = given.get(option.name, option.default)
        problem = option.check(option.name, value, values)
        if problem is not None:
            raise OptionProblem(problem)
        values[option.name] = option.convert(value)
    return values


def named(options: Iterable[Option], name: str) -> Option:
    """The option called ``name``."""
    for option in options:
        if option.name == name:
            return option
    raise KeyError(name)


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


def check_true_or_false(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """An option that is True or False, nothing else (not 0, 1 or "yes")."""
    return None if isinstance(value, bool) else f"{name} must be True or False"


def check_seconds(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A positive number of seconds."""
    return seconds_problem(name, value)


def check_seconds_or_zero(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """Zero or a positive number of seconds."""
    return seconds_problem(name, value, allow_zero=True)


def check_daily_cap(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A positive whole number, or None for no cap."""
    if value is None or (not isinstance(value, bool) and isinstance(value, int) and value >= 1):
        return None
    return f"{name} must be a positive whole number, or None for no cap"


def check_stand_down(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """One of :class:`StandDown`'s values."""
    if value in tuple(s.value for s in StandDown):
        return None
    choices = ", ".join(repr(s.value) for s in StandDown)
    return f"{name} must be one of {choices}, not {value!r:.30}"


BISECTION_KEYS = ("max_changes", "per_builder_per_day", "per_day", "max_age")


def check_bisection(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
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


def check_failures(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A whole number of builds (the policy says how many at least)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{name} must be a whole number of builds"
    return None


def check_age(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A positive number of seconds, or None for no limit."""
    return None if value is None else seconds_problem(name, value)


def seconds_or_none(value: Any) -> float | None:
    """Seconds as a float, None kept."""
    return None if value is None else float(value)


# The policy's options that both shells offer by name (the policy's others
# are the plugin's ``policy_options`` and the simulator's own flags).
POLICY_OPTIONS: tuple[Option, ...] = (
    Option(
        name="failures",
        default=Policy().failures,
        doc="N: consecutive FAILURE builds after a green one before a revert is proposed",
        check=check_failures,
        flag=Flag(help="Consecutive failing builds before a revert is proposed.", metavar="N"),
    ),
    Option(
        name="max_culprit_age",
        default=Policy().max_culprit_age,
        doc="seconds: decline changes that landed longer ago (`None`: no limit)",
        check=check_age,
        convert=seconds_or_none,
        flag=Flag(
            help="Decline to revert changes that landed longer ago than this before the streak "
            "qualified (e.g. 24h, 7d).",
            kind="duration",
        ),
    ),
)
