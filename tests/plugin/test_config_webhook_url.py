"""A webhook URL carries a secret: https only, except a loopback host; named by its origin only.

A string URL is checked by ``checkConfig`` (so by ``buildbot checkconfig``);
a renderable one (``util.Secret``) once the master rendered it, when the
reporter wires its webhooks: a plain-http one is then left off with one line.
"""

from __future__ import annotations

import pytest
from buildbot.process.properties import Secret
from twisted.internet import defer, reactor
from twisted.python import log

from buildbot_revert.plugin.config import SettingsError, parse_settings
from buildbot_revert.plugin.wiring import Wiring
from tests.plugin.test_config_api_url import checkconfig

SECRET = "T000/B000/s3cr3tPATH"
REFUSAL = "must be https (plain http only for a loopback host such as 127.0.0.1)"


def _hooks(fmt: str, url: object, **extra: object) -> list[dict[str, object]]:
    return [{"format": fmt, "url": url, **extra}]


def test_a_plain_http_webhook_url_fails_checkconfig_naming_only_its_origin(tmp_path):
    hooks = _hooks("slack", f"http://hooks.example:8080/services/{SECRET}")
    out = checkconfig(tmp_path, f"webhooks={hooks!r}")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    lines = [line.strip() for line in text.splitlines() if "webhooks" in line]
    assert lines == [
        f"RevertReporter: webhooks[0]: url {REFUSAL}, not http://hooks.example:8080"
    ], text
    assert "s3cr3t" not in text and "Traceback" not in text


def test_an_https_zulip_url_with_its_api_key_passes_checkconfig(tmp_path):
    hooks = _hooks("zulip", "https://bot%40example.org:zulipKEY42@chat.example", stream="ci")
    out = checkconfig(tmp_path, f"webhooks={hooks!r}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "zulipKEY42" not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("fmt", "url", "shown"),
    [
        ("discord", f"http://discord.example/api/webhooks/{SECRET}", "http://discord.example:80"),
        ("json", f"http://10.0.0.1:9000/{SECRET}", "http://10.0.0.1:9000"),
        ("zulip", "http://bot%40example.org:s3cr3tKEY@chat.example", "http://chat.example:80"),
        ("slack", f"HTTP://Hooks.Example/{SECRET}", "http://hooks.example:80"),
    ],
)
def test_plain_http_to_another_host_is_refused_by_its_origin(fmt, url, shown):
    with pytest.raises(SettingsError) as info:
        parse_settings("python/cpython", webhooks=_hooks(fmt, url, stream="ci"))
    assert str(info.value) == f"webhooks[0]: url {REFUSAL}, not {shown}"
    assert "s3cr3t" not in str(info.value)


@pytest.mark.parametrize(
    ("fmt", "url"),
    [
        ("zulip", "https://bot%40example.org:zulipKEY42@chat.example"),
        ("slack", f"https://hooks.slack.com/services/{SECRET}"),
        ("json", f"http://127.0.0.1:8080/{SECRET}"),
        ("json", "http://localhost:8080/hook"),
        ("zulip", "http://bot%40example.org:key@[::1]:9000"),
    ],
)
def test_https_and_loopback_webhook_urls_are_accepted(fmt, url):
    [spec] = parse_settings("python/cpython", webhooks=_hooks(fmt, url, stream="ci")).webhooks
    assert spec.url == url


@defer.inlineCallbacks
def _wired(rendered: str) -> defer.Deferred[tuple[int, list[str]]]:
    """How many webhooks the reporter wires for a Secret rendering to ``rendered``; its log."""
    settings = parse_settings("python/cpython", webhooks=_hooks("slack", Secret("slack_hook")))
    values = {"slack_hook": rendered}
    wiring = Wiring(None, reactor, lambda v: defer.succeed(values[v.secret_name]), "", None)
    lines: list[str] = []

    def observe(event: dict[str, object]) -> None:
        lines.extend(str(m) for m in event.get("message", ()))  # type: ignore[attr-defined]

    log.addObserver(observe)
    try:
        notifier = yield wiring.notifier(settings)
    finally:
        log.removeObserver(observe)
    return len(notifier.webhooks), lines


@pytest.mark.parametrize(
    ("rendered", "wired", "line"),
    [
        (
            f"http://hooks.example/services/{SECRET}",
            0,
            f"buildbot-revert: a slack webhook URL {REFUSAL}, not http://hooks.example:80; "
            "it is off",
        ),
        (
            f"https://hooks.example/services/{SECRET}",
            1,
            "buildbot-revert: notifying a slack webhook at https://hooks.example/\u2026",
        ),
    ],
)
def test_a_secret_webhook_url_is_checked_once_rendered(rendered, wired, line):
    results: list[object] = []
    _wired(rendered).addBoth(results.append)
    assert results == [(wired, [line])]
