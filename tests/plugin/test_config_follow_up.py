"""The follow-up's and the webhooks' settings: defaults, one clear sentence per mistake."""

from __future__ import annotations

import pytest

from buildbot_revert.core.outcomes import StandDown
from buildbot_revert.plugin.config import SettingsError, parse_settings
from tests.plugin.test_config import reporter_with_secrets

HOOK = "https://discord.example/api/webhooks/1/s3cr3tPART"


def test_defaults_close_untouched_prs_every_minute_without_webhooks():
    s = parse_settings("python/cpython")
    assert (s.machine.stand_down, s.machine.close_touched, s.follow_interval, s.webhooks) == (
        StandDown.CLOSE,
        False,
        60.0,
        (),
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stand_down": "delete"}, "stand_down must be one of 'close', 'mark', 'comment'"),
        ({"close_touched": "yes"}, "close_touched must be True or False"),
        ({"follow_interval": -1}, "follow_interval"),
        ({"webhooks": "https://x"}, "webhooks must be a list of dicts"),
        ({"webhooks": [{"format": "teams", "url": HOOK}]}, r"webhooks\[0\]: format must be"),
        ({"webhooks": [{"format": "slack", "url": HOOK, "event": []}]}, "unknown key"),
    ],
)
def test_a_bad_follow_up_or_webhook_setting_is_one_sentence(options, message):
    with pytest.raises(SettingsError, match=message) as info:
        parse_settings("python/cpython", **options)
    assert "s3cr3tPART" not in str(info.value)


def test_webhook_urls_are_hidden_from_buildbots_record_and_the_settings_repr():
    hooks = [{"format": "discord", "url": HOOK}]
    reporter = reporter_with_secrets({}, repo="python/cpython", webhooks=hooks)
    assert "s3cr3tPART" not in repr(reporter.getConfigDict())
    assert "s3cr3tPART" not in repr(parse_settings("python/cpython", webhooks=hooks))
