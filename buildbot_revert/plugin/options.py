"""``RevertReporter``'s options, declared once (:class:`~buildbot_revert.core.options.Option`).

:func:`declared` is every option the reporter takes, in the order they are
checked (the first two may be given by position): the options only the
plugin takes are declared here, the policy's ``failures`` and
``max_culprit_age`` in the core (:data:`~buildbot_revert.core.options.POLICY_OPTIONS`),
the post-verdict machine's as the fields of the core's
:class:`~buildbot_revert.core.machine_io.MachineSettings`.  From it derive
:func:`~buildbot_revert.plugin.config.parse_settings` (so ``checkConfig``
and ``buildbot checkconfig``), the misspelled-option hints, and the
documentation's option table (docs/hooks.py).  Consumers call
:func:`declared` when they run, never keep a copy taken at import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.machine_io import machine_options
from buildbot_revert.core.options import (
    POLICY_OPTIONS,
    Option,
    check_seconds,
    check_true_or_false,
    named,
    whole_problem,
)
from buildbot_revert.core.policy import Policy, PolicyError
from buildbot_revert.core.standing import REQUIRABLE
from buildbot_revert.github.origin import api_url_problem, has_userinfo
from buildbot_revert.plugin.notify.settings import WebhookError, parse_webhooks

_REPO_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}\Z")
_URL_RE = re.compile(r"https?://[^\s/]+(?::\d+)?(?:/[^\s]*)?\Z")
DEFAULT_API_URL = "https://api.github.com"
MODES = ("dry-run", "comment", "revert")
# The policy a master.cfg gets when it sets none of the policy's options.
DEFAULT_POLICY = Policy()

# Each check below takes a value as master.cfg wrote it (``Any``: whatever a
# user passed, checked here) and the values checked before it.

# Buildbot's own argument of every reporter, taken by the reporter itself.
BUILDBOT_OPTIONS: dict[str, str] = {
    "name": (
        "the service's name (default `RevertReporter`); give another to run several reporters, "
        "and pass it to `util.RevertDashboard(reporter=...)`"
    ),
}


def _repo(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    if isinstance(value, str) and _REPO_RE.match(value):
        return None
    return f"{name} must look like 'owner/name', not {value!r:.60}"


def _token(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A string or a renderable; never shown (it is a secret)."""
    if value is None or hasattr(value, "getRenderingFor") or isinstance(value, str):
        return None
    return (
        f"{name} must be a string or a renderable such as util.Secret('github_token'), "
        f"not {type(value).__name__}"
    )


def _no_blank_token(value: Any) -> Any:
    """The token as given, or None when there is none (an empty string is none)."""
    return None if isinstance(value, str) and not value.strip() else value


def _api_url(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """https unless its host is this machine; no ``user:password@`` (never echoed)."""
    if not isinstance(value, str) or not _URL_RE.match(value):
        return f"{name} must be an http(s) URL such as {DEFAULT_API_URL}"
    problem = api_url_problem(value)
    if problem is None:
        return None
    # A userinfo part may be a password: the URL is not echoed then.
    shown = "" if has_userinfo(value) else f", not {value!r:.80}"
    return f"{name} {problem}{shown}"


def _mode(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A mode; every mode but dry-run needs the token (accepted before it)."""
    if value not in MODES:
        return f"{name} must be one of {', '.join(MODES)}, not {value!r:.40}"
    if value != "dry-run" and earlier["token"] is None:
        return f"{name} {value!r} needs a token, e.g. token=util.Secret('github_token')"
    return None


def names(value: Any) -> frozenset[str] | None:
    """One name or a list of non-empty names; None when ``value`` is neither."""
    given = [value] if isinstance(value, str) else value
    if not isinstance(given, Iterable) or isinstance(given, Mapping):
        return None
    listed = list(given)
    if not all(isinstance(x, str) and x for x in listed):
        return None
    return frozenset(listed)


def _builders(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A regular expression, or a list of builder names (None: all)."""
    if isinstance(value, str):
        try:
            re.compile(value)
        except re.error as exc:
            return f"{name} is not a valid regular expression: {exc}"
        return None
    if value is None:
        return None
    listed = names(value)
    if listed is None:
        return f"{name} must be a regular expression or a list of builder names"
    return None if listed else f"{name} must name at least one builder when it is a list"


def _tags(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    return None if names(value) is not None else f"{name} must be a list of tag names"


def _exclude_tags(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    excluded = names(value)
    if excluded is None:
        return f"{name} must be a list of tag names, e.g. ['PullRequest']"
    both = sorted(earlier["tags"] & excluded)
    if both:
        return f"tags and {name} both name {both[0]!r:.60}: no builder could be selected"
    return None


def policy_of(failures: int, age: float | None, options: Mapping[str, Any] | None) -> Policy:
    """The policy: ``failures`` and ``max_culprit_age``, then any of its other settings."""
    given = dict(options or {})
    for key, value in given.items():
        # master.cfg writes lists; the policy holds frozensets (guards, results).
        if isinstance(value, list | tuple | set) and isinstance(
            getattr(DEFAULT_POLICY, key, None), frozenset
        ):
            given[key] = frozenset(value)
    return Policy(**{"failures": failures, "max_culprit_age": age, **given})


def _policy_options(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A dict of the policy's other settings, which with ``failures`` make a valid policy."""
    if not isinstance(value, Mapping | None):
        return f"{name} must be a dict of policy settings"
    unknown = sorted(set(value or {}) - set(Policy.__dataclass_fields__))
    if unknown:
        return f"{name} has unknown settings: {', '.join(unknown)}"
    try:
        policy_of(earlier["failures"], earlier["max_culprit_age"], value)
    except PolicyError as exc:
        return f"policy: {exc}"
    except TypeError as exc:
        return f"{name}: {exc}"
    return None


def _label(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        return f"{name} must be a non-empty label name of at most 100 characters"
    return None


def _optional_label(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    return None if value is None else _label(name, value, earlier)


def _listed(value: Any) -> tuple[Any, ...]:
    """One item or a list of them, as a tuple."""
    return (value,) if isinstance(value, str) else tuple(value)


def _labels(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """One label name or a list of them (a number is neither: one sentence, not a TypeError)."""
    if not isinstance(value, str | Iterable):
        return _label(name, value, earlier)
    problems = (_label(name, x, earlier) for x in _listed(value))
    return next((p for p in problems if p is not None), None)


def _phrases(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """One phrase or a list of them; a blank one would be "in" every comment."""
    given = [value] if isinstance(value, str) else value
    words: tuple[Any, ...] = ()
    if isinstance(given, Iterable) and not isinstance(given, Mapping):
        words = tuple(given)
    if words and all(isinstance(w, str) and w.strip() for w in words):
        return None
    return f"{name} must be a non-empty list of non-empty phrases, e.g. ['/no-revert']"


def _log_lines(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    return whole_problem(name, value, low=1)


def _role(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A role a user must have at least (read is not one: everyone has it)."""
    if value in REQUIRABLE:
        return None
    return f"{name} must be one of {', '.join(map(repr, REQUIRABLE))}, not {value!r:.40}"


def _webhooks(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """The webhook endpoints, their errors told as the other options' are."""
    try:
        parse_webhooks(value)
    except WebhookError as exc:
        return str(exc)
    return None


def _at_least_a_second(value: Any) -> float:
    """Seconds, never below one (a busier look at GitHub would spend its rate limit)."""
    return max(1.0, float(value))


# The options only the plugin takes, and where the machine's go among them
# (by name): the order of the checks, and of the documentation's table.
PLUGIN_OPTIONS: tuple[Option | str, ...] = (
    Option(
        name="repo", default=None, doc="the GitHub repository, `owner/name` (required)", check=_repo
    ),
    Option(
        name="token",
        default=None,
        doc="the GitHub token: `util.Secret('github_token')`, a `util.Interpolate`, or a string "
        "from the master's own settings file; never logged; needed by every mode but `dry-run` "
        "(where, given, it only reads suspect commits' diffs)",
        check=_token,
        convert=_no_blank_token,
    ),
    Option(
        name="api_url",
        default=DEFAULT_API_URL,
        doc="GitHub's API base URL (GitHub Enterprise: `https://HOST/api/v3`)",
        check=_api_url,
        convert=lambda url: url.rstrip("/"),
    ),
    Option(
        name="mode",
        default="dry-run",
        doc="`dry-run` (decide, log and record; touch nothing on GitHub), `comment` (comment on "
        "the culprit's pull request) or `revert` (also open the revert pull request)",
        check=_mode,
    ),
    Option(
        name="builders",
        default=None,
        doc="the builders that may propose: a regular expression, or a list of names (default: "
        "all); the others are evidence only",
        check=_builders,
    ),
    Option(
        name="tags",
        default=(),
        doc="a builder must carry all these tags to propose",
        check=_tags,
        convert=names,
    ),
    Option(
        name="exclude_tags",
        default=(),
        doc="a builder carrying any of these tags never proposes, e.g. `['PullRequest']`",
        check=_exclude_tags,
        convert=names,
    ),
    "failures",
    "max_culprit_age",
    Option(
        name="policy_options",
        default=None,
        doc="a dict of the policy's other settings (`guards`, `intersection`, `memory_horizon`, "
        "`pull_request_builds`, `stale_green_after`, `tolerated_tags`, ...: "
        "`buildbot_revert/core/policy.py`)",
        check=_policy_options,
    ),
    "grace_period",
    "daily_cap",
    Option(
        name="opt_out_label",
        default=defaults.OPT_OUT_LABEL,
        doc="a culprit pull request carrying this label is never reverted",
        check=_optional_label,
    ),
    Option(
        name="revert_labels",
        default=(),
        doc="labels put on every revert pull request",
        check=_labels,
        convert=_listed,
    ),
    Option(
        name="draft",
        default=False,
        doc="open revert pull requests as drafts",
        check=check_true_or_false,
    ),
    "verification",
    Option(
        name="log_lines",
        default=defaults.LOG_TAIL_LINES,
        doc="lines of each failing step's stdio log read for its failure signature",
        check=_log_lines,
    ),
    Option(
        name="objection_words",
        default=defaults.OBJECTION_WORDS,
        doc="phrases that, in a comment on the culprit's pull request during the grace period, "
        "withdraw the revert",
        check=_phrases,
        convert=_listed,
    ),
    "stand_down",
    "close_touched",
    Option(
        name="follow_interval",
        default=60.0,
        doc="seconds between two looks at the open revert pull requests",
        check=check_seconds,
        convert=_at_least_a_second,
    ),
    "forced_build_timeout",
    Option(
        name="objection_permission",
        default=defaults.OBJECTION_PERMISSION,
        doc="the least permission (`triage`, `write`, `maintain`, `admin`) that makes an objection "
        "or the opt-out label count, besides the culprit's author (see [security](security.md))",
        check=_role,
    ),
    Option(
        name="webhooks",
        default=None,
        doc="a list of webhooks (`discord`, `slack`, `zulip`, `json`) announcing proposals, filed "
        "reverts and stand-downs (see [webhooks](operating.md#webhooks))",
        check=_webhooks,
        convert=parse_webhooks,
    ),
    "bisection",
)
# How many of the options may be given by position (repo, token).
POSITIONAL = 2


def declared() -> tuple[Option, ...]:
    """Every option ``RevertReporter`` takes, in the order they are checked.

    The policy's and the machine's options are the core's (the machine's are
    :class:`~buildbot_revert.core.machine_io.MachineSettings`' fields, read
    when this runs): one the plugin does not place comes last.
    """
    core = (*POLICY_OPTIONS, *machine_options())
    placed = {o for o in PLUGIN_OPTIONS if isinstance(o, str)}
    rows = [named(core, o) if isinstance(o, str) else o for o in PLUGIN_OPTIONS]
    return (*rows, *(o for o in core if o.name not in placed))
