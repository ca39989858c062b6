"""The reporter's settings are checked in one fixed order: with several bad, the first is told."""

from __future__ import annotations

import pytest

from buildbot_revert.plugin.config import SettingsError, parse_settings

# One bad value per option, in the order parse_settings checks them.
BAD_IN_ORDER = [
    ("repo", "cpython", "repo must"),
    ("api_url", "ftp://x", "api_url must"),
    ("mode", "yolo", "mode must"),
    ("builders", 3, "builders must"),
    ("failures", "3", "failures must"),
    ("grace_period", -1, "grace_period must"),
    ("daily_cap", 0, "daily_cap must"),
    ("opt_out_label", "", "opt_out_label must"),
    ("revert_labels", [""], "revert_labels must"),
    ("draft", "yes", "draft must"),
    ("verification", "yes", "verification must"),
    ("log_lines", 0, "log_lines must"),
    ("objection_words", 3, "objection_words must"),
    ("stand_down", "explode", "stand_down must"),
    ("close_touched", "yes", "close_touched must"),
    ("follow_interval", 0, "follow_interval must"),
    ("forced_build_timeout", 0, "forced_build_timeout must"),
    ("objection_permission", "root", "objection_permission must"),
    ("webhooks", 3, "webhooks"),
    ("bisection", 3, "bisection must"),
]


@pytest.mark.parametrize("first", range(len(BAD_IN_ORDER)))
def test_with_several_bad_options_the_first_checked_is_told(first: int) -> None:
    kwargs = {"repo": "python/cpython"}
    kwargs.update({name: value for name, value, _ in BAD_IN_ORDER[first:]})
    with pytest.raises(SettingsError) as info:
        parse_settings(**kwargs)
    assert str(info.value).startswith(BAD_IN_ORDER[first][2]), str(info.value)
