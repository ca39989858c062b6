"""The reporter's settings, checked once with one clear sentence per mistake.

:func:`parse_settings` turns the keyword arguments a ``master.cfg`` passes to
``RevertReporter`` into a :class:`Settings` record, or raises
:class:`SettingsError` naming the bad argument.  It imports nothing from
Buildbot, so it is tested as plain Python; the reporter calls it from
``checkConfig`` and turns the error into Buildbot's ``config.error``.

Every option, its default, its check and its documentation is declared once,
by :func:`buildbot_revert.plugin.options.declared` (the post-verdict machine's
as the fields of the core's :class:`~buildbot_revert.core.machine_io.MachineSettings`):
:func:`parse_settings` runs the checks in that order, and the machine's
settings are read from the same values (:attr:`Settings.machine`).

Misspelled keywords are caught by :func:`parse_arguments`, which names the
bad one, suggests the nearest option and lists them all (:func:`option_names`).

The token is the one setting this module never looks into: it is usually a
renderable (``util.Secret('github_token')`` or ``util.Interpolate(...)``)
that only the master can render, or a plain string the ``master.cfg`` read
from its own settings file, and it must never reach a message.  It is kept
as an opaque object; :func:`describe_token` names it in messages by the
secret it refers to, never by its value, and :func:`rendered_token` checks
what the master rendered.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.machine_io import MachineSettings, machine_settings
from buildbot_revert.core.options import OptionProblem, accept
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import BuilderSelection
from buildbot_revert.plugin import options
from buildbot_revert.plugin.notify.settings import WebhookSpec
from buildbot_revert.plugin.options import policy_of

__all__ = ["Mode", "Settings", "SettingsError", "parse_settings"]

# ``%(secret:NAME)s`` or ``%(secret:NAME:-default)s`` in a util.Interpolate.
_INTERPOLATED_SECRET_RE = re.compile(r"%\(secret:([^:)]+)")


class SettingsError(ValueError):
    """A reporter setting that cannot work (the message is shown to the user as is)."""


class Mode(StrEnum):
    """How far the reporter goes on GitHub."""

    # Decide, log and record in the ledger; touch nothing on GitHub.
    DRY_RUN = "dry-run"
    # Comment on the culprit's pull request only.
    COMMENT = "comment"
    # Comment, and open the revert pull request.
    REVERT = "revert"


@dataclass(frozen=True)
class Settings:
    """Everything the reporter was configured with, validated.

    Made by :func:`parse_settings`, which fills every field from the declared
    options' values (their defaults: :func:`buildbot_revert.plugin.options.declared`).
    """

    repo: str
    token: Any = field(repr=False)
    api_url: str
    mode: Mode
    # The builders that propose reverts (the simulator's --builders,
    # --builder-names, --tags and --exclude-tags make the same selection);
    # the others are evidence only.
    watched: BuilderSelection
    policy: Policy
    # The post-verdict machine's settings (grace period, daily cap,
    # verification, bisection, stand-down...), declared by its own fields.
    machine: MachineSettings
    opt_out_label: str | None
    revert_labels: tuple[str, ...]
    draft: bool
    # How many of the master's most recent builds to replay on start.
    # The lines of each failing step's stdio log handed to the core.
    log_lines: int
    # Comments that, posted on the culprit PR during the grace period, stop the revert.
    objection_words: tuple[str, ...]
    # Seconds between two looks at the open revert PRs on GitHub.
    follow_interval: float = 60.0
    # Webhooks announcing proposals, filed reverts and stand-downs (plugin.notify).
    webhooks: tuple[WebhookSpec, ...] = ()
    # An objection or the opt-out label counts from the culprit's author, or
    # from a user with at least this role on the repository (core.standing).
    objection_permission: str = defaults.OBJECTION_PERMISSION

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]

    def watches(self, builder: str, tags: Iterable[str]) -> bool:
        """Whether the reporter acts on this builder."""
        return self.watched.keeps(builder, tags)


def parse_settings(repo: Any = None, token: Any = None, **given: Any) -> Settings:
    """Validate the reporter's arguments; raise :class:`SettingsError` on the first bad one.

    Every option of :func:`~buildbot_revert.plugin.options.declared` is checked in
    that order, and converted once its check accepts it.
    """
    check_arguments((), given)
    values = accepted({"repo": repo, "token": token, **given})
    return Settings(
        repo=values["repo"],
        token=values["token"],
        api_url=values["api_url"],
        mode=Mode(values["mode"]),
        watched=_builder_selection(values),
        policy=policy_of(values["failures"], values["max_culprit_age"], values["policy_options"]),
        machine=machine_settings(values),
        opt_out_label=values["opt_out_label"],
        revert_labels=values["revert_labels"],
        draft=values["draft"],
        log_lines=values["log_lines"],
        objection_words=values["objection_words"],
        follow_interval=values["follow_interval"],
        objection_permission=values["objection_permission"],
        webhooks=values["webhooks"],
    )


def accepted(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared option's value (its default when not given), checked in order, converted."""
    try:
        return accept(options.declared(), given)
    except OptionProblem as exc:
        raise SettingsError(str(exc)) from None


def _builder_selection(values: Mapping[str, Any]) -> BuilderSelection:
    """``builders`` (a regular expression or a list of names), ``tags`` and ``exclude_tags``."""
    builders = values["builders"]
    pattern = re.compile(builders) if isinstance(builders, str) else None
    listed = None if builders is None or pattern is not None else options.names(builders)
    return BuilderSelection(pattern, values["tags"], values["exclude_tags"], listed)


def option_names() -> tuple[str, ...]:
    """Every argument ``RevertReporter`` takes (besides Buildbot's ``name``), in order."""
    return tuple(o.name for o in options.declared())


def check_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any], *, also: Iterable[str] = ()
) -> None:
    """Raise :class:`SettingsError` for arguments :func:`parse_settings` cannot take.

    A misspelled keyword is named with the nearest option, and every option
    is listed (``also`` adds names the caller takes itself, e.g. ``name``),
    instead of Python's "unexpected keyword argument".
    """
    known_options = option_names()
    positional = known_options[: options.POSITIONAL]
    unknown = [k for k in kwargs if k not in known_options]
    if unknown:
        known = sorted({*known_options, *also})
        hints = []
        for key in unknown:
            near = difflib.get_close_matches(key, known, n=1)
            hints.append(f"{key!r:.60}" + (f" (did you mean {near[0]!r}?)" if near else ""))
        noun = "option" if len(unknown) == 1 else "options"
        raise SettingsError(
            f"unknown {noun} {', '.join(hints)}; the options are: {', '.join(known)}"
        )
    if len(args) > len(positional):
        raise SettingsError(
            f"takes at most {len(positional)} positional arguments ({', '.join(positional)}), "
            f"not {len(args)}; pass the others by keyword"
        )
    twice = [name for name in positional[: len(args)] if name in kwargs]
    if twice:
        raise SettingsError(f"{twice[0]} is given twice, by position and by keyword")


def parse_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any], *, also: Iterable[str] = ()
) -> Settings:
    """:func:`check_arguments`, then :func:`parse_settings`: how master.cfg's arguments are read."""
    check_arguments(args, kwargs, also=also)
    return parse_settings(*args, **kwargs)


def describe_token(token: Any) -> str:
    """How messages name the token: by the secret it refers to, never by its value."""
    secret = getattr(token, "secret_name", None)
    if isinstance(secret, str):
        return f"the GitHub token secret {secret!r}"
    fmtstring = getattr(token, "fmtstring", None)
    if isinstance(fmtstring, str):
        names = sorted(set(_INTERPOLATED_SECRET_RE.findall(fmtstring)))
        if names:
            quoted = ", ".join(repr(n) for n in names)
            return f"the GitHub token secret{'s' if len(names) > 1 else ''} {quoted}"
        return "the GitHub token (an Interpolate)"
    if hasattr(token, "getRenderingFor"):
        return f"the GitHub token (a {type(token).__name__})"
    return "the GitHub token"


def rendered_token(value: Any) -> str:
    """The token the master rendered, checked: a non-empty string without inner spaces.

    Surrounding white space (a secret file's newline) is dropped.  Raises
    :class:`SettingsError`, whose text never holds the value, when it is unusable.
    """
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise SettingsError("it is bytes that are not ASCII text") from None
    if not isinstance(value, str):
        raise SettingsError(f"it is a {type(value).__name__}, not a string")
    token = value.strip()
    if not token:
        raise SettingsError("it is empty")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise SettingsError("it holds spaces or control characters")
    return token
