"""What each of ``RevertReporter``'s options does, in words, for the documentation.

The option names and their defaults are not written here: the documentation's
option table (docs/hooks.py) takes them from :func:`parse_settings`'s own
signature (:data:`buildbot_revert.plugin.config.OPTIONS`), and joins them with
these sentences.  A test holds this mapping to that signature, so an option
cannot be added, renamed or dropped without its entry changing too.
"""

from __future__ import annotations

# Buildbot's own argument of every reporter, taken by the reporter itself
# rather than by parse_settings.
BUILDBOT_OPTIONS: dict[str, str] = {
    "name": (
        "the service's name (default `RevertReporter`); give another to run several reporters, "
        "and pass it to `util.RevertDashboard(reporter=...)`"
    ),
}

OPTION_DOCS: dict[str, str] = {
    "repo": "the GitHub repository, `owner/name` (required)",
    "token": (
        "the GitHub token: `util.Secret('github_token')`, a `util.Interpolate`, or a string "
        "from the master's own settings file; never logged; needed by every mode but `dry-run` "
        "(where, given, it only reads suspect commits' diffs)"
    ),
    "api_url": "GitHub's API base URL (GitHub Enterprise: `https://HOST/api/v3`)",
    "mode": (
        "`dry-run` (decide, log and record; touch nothing on GitHub), `comment` (comment on "
        "the culprit's pull request) or `revert` (also open the revert pull request)"
    ),
    "builders": (
        "the builders that may propose: a regular expression, or a list of names (default: "
        "all); the others are evidence only"
    ),
    "tags": "a builder must carry all these tags to propose",
    "exclude_tags": "a builder carrying any of these tags never proposes, e.g. `['PullRequest']`",
    "failures": "N: consecutive FAILURE builds after a green one before a revert is proposed",
    "max_culprit_age": "seconds: decline changes that landed longer ago (`None`: no limit)",
    "policy_options": (
        "a dict of the policy's other settings (`guards`, `intersection`, `memory_horizon`, "
        "`pull_request_builds`, `stale_green_after`, `tolerated_tags`, ...: "
        "`buildbot_revert/core/policy.py`)"
    ),
    "grace_period": (
        "seconds between the comment on the culprit's pull request and the revert; 0 files at "
        "once (see [grace periods](operating.md#grace-periods))"
    ),
    "daily_cap": "at most this many revert pull requests in any 24 hours (`None`: no cap)",
    "opt_out_label": "a culprit pull request carrying this label is never reverted",
    "revert_labels": "labels put on every revert pull request",
    "draft": "open revert pull requests as drafts",
    "log_lines": "lines of each failing step's stdio log read for its failure signature",
    "objection_words": (
        "phrases that, in a comment on the culprit's pull request during the grace period, "
        "withdraw the revert"
    ),
    "objection_permission": (
        "the least permission (`triage`, `write`, `maintain`, `admin`) that makes an objection "
        "or the opt-out label count, besides the culprit's author (see [security](security.md))"
    ),
    "stand_down": (
        "once a fix made a revert pull request unnecessary: `close` it, `mark` it with a label, "
        "or only `comment`"
    ),
    "close_touched": (
        "close such a pull request even when someone else commented on, reviewed or pushed to it"
    ),
    "follow_interval": "seconds between two looks at the open revert pull requests",
    "webhooks": (
        "a list of webhooks (`discord`, `slack`, `zulip`, `json`) announcing proposals, filed "
        "reverts and stand-downs (see [webhooks](operating.md#webhooks))"
    ),
    "verification": (
        "build the suspect's parent on the failing builder before filing; file only if it passes"
    ),
    "bisection": (
        "`True` or a dict of caps (`max_changes`, `per_builder_per_day`, `per_day`, `max_age`): "
        "bisect a first failing build of several changes with forced builds"
    ),
    "forced_build_timeout": (
        "seconds after which a verification or bisection build not finished is taken to have "
        "never run (the verdict is declined `unverified`)"
    ),
}
