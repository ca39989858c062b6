"""The ``simulate`` command's flags, turned into what the simulator library takes.

Dates, durations, the policy, the builder selection and the sweep's axes are
read here, each mistake raised as a :class:`~simulator.cli_errors.CLIError`
naming the flag, so :mod:`simulator.cli` stays the click layer: options in,
a replay or a sweep run, a report out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import click
from click.core import ParameterSource

from buildbot_revert.core.machine_io import MachineSettings, machine_options, machine_settings
from buildbot_revert.core.options import POLICY_OPTIONS, Option, OptionProblem, accept, named
from buildbot_revert.core.policy import GUARD_NAMES, Policy, PolicyError
from simulator.analysis.replay import Selection
from simulator.analysis.sweep import SweepError, parse_axes, parse_duration
from simulator.cli_errors import CLIError

# The plugin's defaults, so that a run without flags replays a freshly
# configured reporter: the policy's in buildbot_revert.core.policy, the
# machine's where its options are declared (core.machine_io.MachineSettings).
DEFAULT_POLICY = Policy()
# The machine's options the CLI places itself among its other flags (the
# others that carry a flag come after them, in their declared order).
PLACED = ("grace_period", "verification", "bisection")


def parse_when(value: str | None, flag: str) -> float | None:
    """A date or ISO 8601 time, taken as UTC when it names no zone."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise CLIError(f"{flag}: {value!r} is not a date (use YYYY-MM-DD)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def parse_flag_duration(value: str | None, flag: str) -> float | None:
    """A duration flag, read by the parser ``--sweep`` uses (``24h``, ``7d``...)."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except SweepError as exc:
        raise CLIError(f"{flag}: {exc}") from None


def given(ctx: click.Context, name: str) -> bool:
    """Whether the option was on the command line (not left at its default)."""
    return ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE


def refuse_options_before_subcommand(ctx: click.Context) -> None:
    """``simulate --since D pull URL`` would drop --since: say so instead."""
    misplaced = [p.opts[0] for p in ctx.command.params if p.name and given(ctx, p.name)]
    if misplaced:
        sub = ctx.invoked_subcommand
        raise CLIError(
            f"{', '.join(misplaced)} given before {sub!r} would be ignored; "
            f"give {sub}'s options after it (simulate {sub} URL [OPTIONS], "
            f"see simulate {sub} --help)"
        )


def make_policy(
    failures: int, max_culprit_age: float | None, without_guards: tuple[str, ...]
) -> Policy:
    """The plugin's default policy with --failures, --max-culprit-age and --without-guard."""
    guards = frozenset() if "all" in without_guards else GUARD_NAMES - set(without_guards)
    try:
        policy = DEFAULT_POLICY.with_changes(failures=failures, guards=guards)
    except PolicyError as exc:
        raise CLIError(f"--failures: {exc}") from None
    if max_culprit_age is None:
        return policy
    try:
        return policy.with_changes(max_culprit_age=max_culprit_age)
    except PolicyError as exc:
        raise CLIError(f"--max-culprit-age: {exc}") from None


def settings_as_axes(
    ctx: click.Context, sweeps: tuple[str, ...], grace: str | None
) -> tuple[str, ...]:
    """The sweep specs, with --grace as a one-value axis; a setting both given and swept
    is an error.

    --failures and --max-culprit-age reach the sweep through its base policy;
    the grace period has no such way in, so it becomes ``grace=VALUE``.
    """
    try:
        swept = {axis.key for axis in parse_axes(sweeps)}
    except SweepError as exc:
        raise CLIError(f"--sweep: {exc}") from None
    for key in ("failures", "grace", "max-culprit-age"):
        if key in swept and given(ctx, key.replace("-", "_")):
            raise CLIError(f"--{key} and --sweep {key}=... both given: use one of them")
    if grace is not None:
        return (*sweeps, f"grace={grace}")
    return sweeps


def make_selection(
    since: str | None,
    until: str | None,
    builders_re: str | None,
    tags: str | None,
    builder_names: str | None = None,
    exclude_tags: str | None = None,
) -> Selection:
    """The window and the builders that may propose, as the plugin's selection options."""
    lo = parse_when(since, "--since")
    hi = parse_when(until, "--until")
    if lo is not None and hi is not None and hi <= lo:
        raise CLIError("--until must be later than --since")
    pattern = None
    if builders_re is not None:
        try:
            pattern = re.compile(builders_re)
        except re.error as exc:
            raise CLIError(f"--builders: not a regular expression ({exc})") from None
    names = None
    if builder_names is not None:
        names = comma_list(builder_names)
        if not names:
            raise CLIError("--builder-names: no builder name given")
    wanted, unwanted = comma_list(tags), comma_list(exclude_tags)
    both = sorted(wanted & unwanted)
    if both:
        raise CLIError(
            f"--tags and --exclude-tags both name {both[0]!r}: no builder could be selected"
        )
    return Selection(lo, hi, pattern, wanted, unwanted, names)


def comma_list(value: str | None) -> frozenset[str]:
    """The names in a comma-separated flag value, stripped, empty ones dropped."""
    return frozenset(t.strip() for t in (value or "").split(",") if t.strip())


def _param(option: Option) -> str:
    """The name click gives the flag's value (``--grace``: ``grace``)."""
    return option.spelling.lstrip("-").replace("-", "_")


def _duration_text(seconds: float | None) -> str:
    """A duration default as the help shows it."""
    if seconds is None:
        return "no limit"
    return "0, file at once" if not seconds else f"{seconds / 3600:g}h"


def _flag(option: Option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option that offers one of the core's declared options."""
    assert option.flag is not None
    flag = option.flag
    if flag.kind == "switch":
        return click.option(option.spelling, is_flag=True, help=flag.help)
    if flag.kind == "duration":
        help_text = f"{flag.help} Default: {_duration_text(option.default)}."
        return click.option(option.spelling, metavar="DURATION", help=help_text)
    if flag.kind == "count":
        shown = "none" if option.default is None else option.default
        help_text = f"{flag.help} Default: {shown}."
        return click.option(option.spelling, metavar="N|none", help=help_text)
    return click.option(
        option.spelling,
        type=type(option.default),
        metavar=flag.metavar,
        default=option.default,
        show_default=True,
        help=flag.help,
    )


def declared_flag(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flag of the core's option ``name`` (the policy's or the machine's), as declared."""
    return _flag(named((*POLICY_OPTIONS, *machine_options()), name))


def other_machine_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """The flags of the machine's options that carry one and are not :data:`PLACED`."""
    offered = [o for o in machine_options() if o.flag is not None and o.name not in PLACED]
    for option in reversed(offered):
        command = _flag(option)(command)
    return command


def parse_flag_count(text: str, flag: str) -> int | None:
    """A whole number, or None for ``none`` (the option's check says whether it is allowed)."""
    if text.strip().lower() in ("none", "off"):
        return None
    try:
        return int(text)
    except ValueError:
        raise CLIError(f"{flag}: {text!r} is not a whole number or none") from None


def machine_from_flags(flags: Mapping[str, Any]) -> MachineSettings:
    """The machine's settings from its flags' values (by click's names), checked as the plugin's.

    A flag not given leaves its option at the declared default.
    """
    given: dict[str, Any] = {}
    for option in machine_options():
        if option.flag is None or flags.get(_param(option)) is None:
            continue
        value = flags[_param(option)]
        if option.flag.kind == "duration":
            value = parse_flag_duration(value, option.spelling)
        elif option.flag.kind == "count":
            value = parse_flag_count(value, option.spelling)
        given[option.name] = value
    try:
        return machine_settings(accept(machine_options(), given))
    except OptionProblem as exc:
        raise CLIError(str(exc)) from None
