"""The reporter's settings, checked once with one clear sentence per mistake.

:func:`parse_settings` turns the keyword arguments a ``master.cfg`` passes to
``RevertReporter`` into a :class:`Settings` record, or raises
:class:`SettingsError` naming the bad argument.  It imports nothing from
Buildbot, so it is tested as plain Python; the reporter calls it from
``checkConfig`` and turns the error into Buildbot's ``config.error``.

An option left out takes its default from :mod:`buildbot_revert.core.defaults`
(the policy's from :class:`~buildbot_revert.core.policy.Policy`), where the
simulator reads the same defaults.

Misspelled keywords are caught by :func:`parse_arguments`, which names the
bad one, suggests the nearest option and lists them all (:data:`OPTIONS`).

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
import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.machine_io import BisectionCaps, MachineSettings
from buildbot_revert.core.outcomes import StandDown
from buildbot_revert.core.policy import Policy, PolicyError
from buildbot_revert.core.selection import BuilderSelection
from buildbot_revert.core.standing import REQUIRABLE
from buildbot_revert.github.origin import api_url_problem, has_userinfo
from buildbot_revert.plugin.config_bisection import BisectionSettings, bisection_settings
from buildbot_revert.plugin.config_errors import SettingsError
from buildbot_revert.plugin.config_errors import positive_number as _positive_number
from buildbot_revert.plugin.config_errors import whole_number as _whole_number
from buildbot_revert.plugin.notify.settings import WebhookError, WebhookSpec, parse_webhooks

__all__ = ["BisectionSettings", "Mode", "Settings", "SettingsError", "parse_settings"]

_REPO_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}\Z")
_URL_RE = re.compile(r"https?://[^\s/]+(?::\d+)?(?:/[^\s]*)?\Z")
DEFAULT_API_URL = "https://api.github.com"
# ``%(secret:NAME)s`` or ``%(secret:NAME:-default)s`` in a util.Interpolate.
_INTERPOLATED_SECRET_RE = re.compile(r"%\(secret:([^:)]+)")
# The policy a master.cfg gets when it sets none of the policy's options.
_DEFAULT_POLICY = Policy()


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

    Made by :func:`parse_settings`, which fills every field: the defaults are
    its keyword defaults (:mod:`buildbot_revert.core.defaults`).
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
    # Seconds between the comment on the culprit and the revert PR; 0 files at once.
    grace_period: float
    # At most this many revert PRs in any 24 hours (None: no cap).
    daily_cap: int | None
    opt_out_label: str | None
    revert_labels: tuple[str, ...]
    draft: bool
    # How many of the master's most recent builds to replay on start.
    # The lines of each failing step's stdio log handed to the core.
    log_lines: int
    # Comments that, posted on the culprit PR during the grace period, stop the revert.
    objection_words: tuple[str, ...]
    # The follow-up of a filed revert PR (plugin.follow_up): what to do once a
    # fix made it unnecessary, and whether to close it even if a human touched it.
    stand_down: StandDown = StandDown.CLOSE
    close_touched: bool = False
    # Seconds between two looks at the open revert PRs on GitHub.
    follow_interval: float = 60.0
    # Webhooks announcing proposals, filed reverts and stand-downs (plugin.notify).
    webhooks: tuple[WebhookSpec, ...] = ()
    # Before filing, build the suspect's parent (and, when its first failing
    # build held other changes, the suspect) on the failing builder, and file
    # only if the parent passes (see buildbot_revert.core.verification).
    verification: bool = False
    # Bisect a first failing build of several changes with verification
    # builds (None: off); its caps.
    bisection: BisectionSettings | None = None
    # Seconds after which a verification or bisection build that has not
    # finished is taken to have never run (verdict declined, search abandoned).
    forced_build_timeout: float = defaults.FORCED_BUILD_TIMEOUT
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


def parse_settings(
    repo: Any = None,
    token: Any = None,
    *,
    api_url: Any = DEFAULT_API_URL,
    mode: Any = Mode.DRY_RUN.value,
    builders: Any = None,
    tags: Any = (),
    exclude_tags: Any = (),
    failures: Any = _DEFAULT_POLICY.failures,
    max_culprit_age: Any = _DEFAULT_POLICY.max_culprit_age,
    policy_options: Mapping[str, Any] | None = None,
    grace_period: Any = defaults.GRACE_PERIOD,
    daily_cap: Any = defaults.DAILY_CAP,
    opt_out_label: Any = defaults.OPT_OUT_LABEL,
    revert_labels: Any = (),
    draft: Any = False,
    log_lines: Any = defaults.LOG_TAIL_LINES,
    objection_words: Any = defaults.OBJECTION_WORDS,
    stand_down: Any = StandDown.CLOSE.value,
    close_touched: Any = False,
    follow_interval: Any = 60.0,
    webhooks: Any = None,
    verification: Any = False,
    bisection: Any = None,
    forced_build_timeout: Any = defaults.FORCED_BUILD_TIMEOUT,
    objection_permission: Any = defaults.OBJECTION_PERMISSION,
) -> Settings:
    """Validate the reporter's arguments; raise :class:`SettingsError` on the first bad one.

    Keyword arguments are evaluated left to right: the order below is the checks' order.
    """
    valid_repo = _repo(repo)
    valid_api_url = _api_url(api_url)
    valid_mode, valid_token = _mode_and_token(mode, token)
    return Settings(
        repo=valid_repo,
        token=valid_token,
        api_url=valid_api_url,
        mode=valid_mode,
        watched=_builder_selection(builders, tags, exclude_tags),
        policy=_policy(failures, max_culprit_age, policy_options),
        grace_period=_positive_number("grace_period", grace_period, allow_zero=True),
        daily_cap=_daily_cap(daily_cap),
        opt_out_label=None if opt_out_label is None else _label("opt_out_label", opt_out_label),
        revert_labels=_labels("revert_labels", revert_labels),
        draft=_flag("draft", draft),
        verification=_flag("verification", verification),
        log_lines=_whole_number("log_lines", log_lines, low=1),
        objection_words=_phrases("objection_words", objection_words),
        stand_down=_stand_down(stand_down),
        close_touched=_flag("close_touched", close_touched),
        follow_interval=max(1.0, _positive_number("follow_interval", follow_interval)),
        forced_build_timeout=_positive_number("forced_build_timeout", forced_build_timeout),
        objection_permission=_role("objection_permission", objection_permission),
        webhooks=_webhooks(webhooks),
        bisection=bisection_settings(bisection),
    )


def _flag(name: str, value: Any) -> bool:
    """An option that is True or False, nothing else (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise SettingsError(f"{name} must be True or False")
    return value


def _stand_down(value: Any) -> StandDown:
    """What the plugin does to an open revert PR that is no longer needed."""
    try:
        return StandDown(value)
    except ValueError:
        choices = ", ".join(repr(s.value) for s in StandDown)
        raise SettingsError(f"stand_down must be one of {choices}, not {value!r:.30}") from None


def _role(name: str, value: Any) -> Any:
    """``value``, once :func:`_check_role` accepted it."""
    _check_role(name, value)
    return value


def _webhooks(webhooks: Any) -> tuple[WebhookSpec, ...]:
    """The webhook endpoints, their errors told as the other options' are."""
    try:
        return parse_webhooks(webhooks)
    except WebhookError as exc:
        raise SettingsError(str(exc)) from None


def _repo(repo: Any) -> str:
    if not isinstance(repo, str) or not _REPO_RE.match(repo):
        raise SettingsError(f"repo must look like 'owner/name', not {repo!r:.60}")
    return repo


def _api_url(api_url: Any) -> str:
    """The API's base URL, without a trailing slash (paths are appended to it).

    It receives the token, so it must be ``https`` unless its host is this
    machine (a stand-in in tests, a local proxy), and holds no ``user:password@``
    (never echoed: it may be a secret): see :mod:`buildbot_revert.github.origin`.
    """
    if not isinstance(api_url, str) or not _URL_RE.match(api_url):
        raise SettingsError(f"api_url must be an http(s) URL such as {DEFAULT_API_URL}")
    problem = api_url_problem(api_url)
    if problem is not None:
        # A userinfo part may be a password: the URL is not echoed then.
        shown = "" if has_userinfo(api_url) else f", not {api_url!r:.80}"
        raise SettingsError(f"api_url {problem}{shown}")
    return api_url.rstrip("/")


def _check_role(name: str, value: Any) -> None:
    """A role a user must have at least (read is not one: everyone has it)."""
    if value not in REQUIRABLE:
        raise SettingsError(
            f"{name} must be one of {', '.join(map(repr, REQUIRABLE))}, not {value!r:.40}"
        )


def _mode_and_token(mode: Any, token: Any) -> tuple[Mode, Any]:
    """The mode, and the token (None when there is none), which every mode but dry-run needs."""
    try:
        valid_mode = Mode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise SettingsError(f"mode must be one of {choices}, not {mode!r:.40}") from None
    valid_token = _token(token)
    if valid_mode is not Mode.DRY_RUN and valid_token is None:
        raise SettingsError(
            f"mode {valid_mode.value!r} needs a token, e.g. token=util.Secret('github_token')"
        )
    return valid_mode, valid_token


def _token(token: Any) -> Any:
    """The token as given, or None when there is none (an empty string is none)."""
    if token is None or hasattr(token, "getRenderingFor"):
        return token
    if not isinstance(token, str):
        raise SettingsError(
            "token must be a string or a renderable such as util.Secret('github_token'), "
            f"not {type(token).__name__}"
        )
    return token if token.strip() else None


def _builder_selection(builders: Any, tags: Any, exclude_tags: Any) -> BuilderSelection:
    """``builders`` (a regular expression or a list of names), ``tags`` and ``exclude_tags``."""
    pattern = None
    names = None
    if isinstance(builders, str):
        try:
            pattern = re.compile(builders)
        except re.error as exc:
            raise SettingsError(f"builders is not a valid regular expression: {exc}") from None
    elif builders is not None:
        names = _names(builders)
        if names is None:
            raise SettingsError("builders must be a regular expression or a list of builder names")
        if not names:
            raise SettingsError("builders must name at least one builder when it is a list")
    required, excluded = _names(tags), _names(exclude_tags)
    if required is None:
        raise SettingsError("tags must be a list of tag names")
    if excluded is None:
        raise SettingsError("exclude_tags must be a list of tag names, e.g. ['PullRequest']")
    both = sorted(required & excluded)
    if both:
        raise SettingsError(
            f"tags and exclude_tags both name {both[0]!r:.60}: no builder could be selected"
        )
    return BuilderSelection(pattern, required, excluded, names)


def _names(value: Any) -> frozenset[str] | None:
    """One name or a list of non-empty names; None when ``value`` is neither."""
    given = [value] if isinstance(value, str) else value
    if not isinstance(given, Iterable) or isinstance(given, Mapping):
        return None
    names = list(given)
    if not all(isinstance(x, str) and x for x in names):
        return None
    return frozenset(names)


def _policy(failures: Any, max_culprit_age: Any, policy_options: Any) -> Policy:
    """The policy: ``failures`` and ``max_culprit_age``, then any of its other settings."""
    if isinstance(failures, bool) or not isinstance(failures, int):
        raise SettingsError("failures must be a whole number of builds")
    age = None if max_culprit_age is None else _positive_number("max_culprit_age", max_culprit_age)
    if not isinstance(policy_options, Mapping | None):
        raise SettingsError("policy_options must be a dict of policy settings")
    options = dict(policy_options or {})
    unknown = sorted(set(options) - set(Policy.__dataclass_fields__))
    if unknown:
        raise SettingsError(f"policy_options has unknown settings: {', '.join(unknown)}")
    for key, value in options.items():
        # master.cfg writes lists; the policy holds frozensets (guards, results).
        if isinstance(value, list | tuple | set) and isinstance(
            getattr(_DEFAULT_POLICY, key, None), frozenset
        ):
            options[key] = frozenset(value)
    try:
        return Policy(**{"failures": failures, "max_culprit_age": age, **options})
    except PolicyError as exc:
        raise SettingsError(f"policy: {exc}") from None
    except TypeError as exc:
        raise SettingsError(f"policy_options: {exc}") from None


def _daily_cap(daily_cap: Any) -> int | None:
    if daily_cap is None:
        return None
    if isinstance(daily_cap, bool) or not isinstance(daily_cap, int) or daily_cap < 1:
        raise SettingsError("daily_cap must be a positive whole number, or None for no cap")
    return daily_cap


def _label(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        raise SettingsError(f"{name} must be a non-empty label name of at most 100 characters")
    return value


def _labels(name: str, value: Any) -> tuple[str, ...]:
    """One label name or a list of them."""
    return tuple(_label(name, x) for x in ([value] if isinstance(value, str) else value))


def _phrases(name: str, value: Any) -> tuple[str, ...]:
    """One phrase or a list of them."""
    given = [value] if isinstance(value, str) else value
    words: tuple[Any, ...] = ()
    if isinstance(given, Iterable) and not isinstance(given, Mapping):
        words = tuple(given)
    # A blank phrase would be "in" every comment: each would count as an objection.
    if not words or not all(isinstance(w, str) and w.strip() for w in words):
        raise SettingsError(
            f"{name} must be a non-empty list of non-empty phrases, e.g. ['/no-revert']"
        )
    return words


# Every argument ``RevertReporter`` takes (besides Buildbot's ``name``), in order.
OPTIONS: tuple[str, ...] = tuple(inspect.signature(parse_settings).parameters)
# The ones that may be given by position.
POSITIONAL: tuple[str, ...] = tuple(
    name
    for name, p in inspect.signature(parse_settings).parameters.items()
    if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
)


def check_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any], *, also: Iterable[str] = ()
) -> None:
    """Raise :class:`SettingsError` for arguments :func:`parse_settings` cannot take.

    A misspelled keyword is named with the nearest option, and every option
    is listed (``also`` adds names the caller takes itself, e.g. ``name``),
    instead of Python's "unexpected keyword argument".
    """
    unknown = [k for k in kwargs if k not in OPTIONS]
    if unknown:
        known = sorted({*OPTIONS, *also})
        hints = []
        for key in unknown:
            near = difflib.get_close_matches(key, known, n=1)
            hints.append(f"{key!r:.60}" + (f" (did you mean {near[0]!r}?)" if near else ""))
        noun = "option" if len(unknown) == 1 else "options"
        raise SettingsError(
            f"unknown {noun} {', '.join(hints)}; the options are: {', '.join(known)}"
        )
    if len(args) > len(POSITIONAL):
        raise SettingsError(
            f"takes at most {len(POSITIONAL)} positional arguments ({', '.join(POSITIONAL)}), "
            f"not {len(args)}; pass the others by keyword"
        )
    twice = [name for name in POSITIONAL[: len(args)] if name in kwargs]
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


def machine_settings(settings: Settings) -> MachineSettings:
    """The machine's settings from the reporter's."""
    caps = settings.bisection
    bisection = (
        None
        if caps is None
        else BisectionCaps(
            max_changes=caps.max_changes,
            max_age=caps.max_age,
            per_builder_per_day=caps.per_builder_per_day,
            per_day=caps.per_day,
        )
    )
    return MachineSettings(
        verification=settings.verification,
        bisection=bisection,
        forced_build_timeout=settings.forced_build_timeout,
        daily_cap=settings.daily_cap,
        grace_period=settings.grace_period,
        stand_down=settings.stand_down,
        close_touched=settings.close_touched,
    )
