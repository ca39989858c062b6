"""Webhook notifications: each target's format and escaping, and delivery over real HTTP.

The receiver (testkit.webhooks) listens on 127.0.0.1; back-offs and timeouts
run on a FastClock, so GitHub-sized waits take milliseconds.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs

import pytest
import pytest_twisted
from treq.client import HTTPClient
from twisted.internet import reactor
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.plugin.notify import (
    Notice,
    NoticeKind,
    Notifier,
    Webhook,
    discord,
    parse_webhooks,
    plain,
    slack,
    zulip,
)
from buildbot_revert.plugin.notify.settings import WebhookError, public_part
from testkit.github import FastClock
from testkit.webhooks import receiving

HOSTILE = "gh-9: *bold* _it_ `code` @everyone @here <@123> <!channel> @**all** <script>x</script>"
NOTICE = Notice(
    NoticeKind.FILED,
    "a" * 40,
    HOSTILE,
    "Mallory @everyone",
    ("AMD64 <b> 3.x",),
    "https://github.com/python/cpython/pull/7",
    author_login="mallory",
)
SECRET = "T000/B000/sEcReTpArT"


def _discord(notice: Notice = NOTICE, mention: str | None = None) -> dict:
    return json.loads(discord.render(notice, mention).body)


def test_discord_escapes_markdown_and_pings_no_one():
    body = _discord()
    content = body["content"]
    assert body["allowed_mentions"] == {"parse": [], "users": []}
    assert "@everyone" not in content and "@here" not in content
    assert "<@123>" not in content and "<script>" not in content
    assert "\\*bold\\*" in content and "\\`code\\`" in content
    assert "https://github.com/python/cpython/pull/7" in content


def test_discord_mentions_only_the_mapped_author():
    body = _discord(mention="123456789012")
    assert body["allowed_mentions"]["users"] == ["123456789012"]
    assert "<@123456789012>" in body["content"]
    assert _discord(mention="<@&everyone>")["allowed_mentions"]["users"] == []


def test_slack_escapes_angle_brackets_and_defuses_at():
    text = json.loads(slack.render(NOTICE).body)["text"]
    assert "<!channel>" not in text and "<@123>" not in text and "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "@everyone" not in text and "@here" not in text
    assert "`code`" not in text  # a zero-width space breaks the code span
    assert "<https://github.com/python/cpython/pull/7|" in text
    assert "<@U0123ABC>" in json.loads(slack.render(NOTICE, "U0123ABC").body)["text"]


def test_zulip_escapes_markdown_and_wildcard_mentions():
    form = parse_qs(zulip.render(NOTICE, stream="ci", topic="reverts").body.decode())
    content = form["content"][0]
    assert (form["type"], form["to"], form["topic"]) == (["stream"], ["ci"], ["reverts"])
    assert "@**all**" not in content and "@everyone" not in content
    assert "\\<script\\>" in content and "\\`code\\`" in content
    mention = parse_qs(zulip.render(NOTICE, "42").body.decode())["content"][0]
    assert "@**Mallory @\u200beveryone|42**" in mention


def test_plain_json_is_data_html_safe_and_pings_no_one():
    raw = plain.render(NOTICE).body.decode()
    assert "<" not in raw and ">" not in raw
    doc = json.loads(raw)
    assert doc["event"] == "filed"
    assert "<script>" in doc["title"] and "@everyone" not in doc["title"]
    assert doc["url"] == "https://github.com/python/cpython/pull/7"


def test_an_unsafe_url_is_left_out():
    notice = NOTICE._replace(url="javascript:alert(1)")
    assert "javascript" not in _discord(notice)["content"]
    assert json.loads(plain.render(notice).body)["url"] is None


def test_settings_name_the_bad_entry_and_never_the_url():
    [spec] = parse_webhooks([{"format": "slack", "url": f"https://hooks.example/{SECRET}"}])
    assert spec.events == frozenset(NoticeKind) and spec.max_attempts == 3
    with pytest.raises(WebhookError, match=r"webhooks\[0\]: format"):
        parse_webhooks([{"format": "teams", "url": "https://x"}])
    with pytest.raises(WebhookError, match="needs a 'stream'"):
        parse_webhooks([{"format": "zulip", "url": "https://x"}])
    with pytest.raises(WebhookError) as exc:
        parse_webhooks([{"format": "json", "url": f"ftp://h/{SECRET}"}])
    assert SECRET not in str(exc.value)
    assert public_part(f"https://bot:key123@chat.example:8443/{SECRET}?k={SECRET}") == (
        "https://chat.example:8443/\u2026"
    )


# -- delivery over HTTP ------------------------------------------------------------


@pytest.fixture
def receiver():
    with receiving() as r:
        yield r


@pytest.fixture
def http():
    return HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))


def _hook(receiver, http, clock, fmt: str, path: str, lines: list[str], **extra) -> Webhook:
    [spec] = parse_webhooks([{"format": fmt, "url": f"{receiver.url}{path}", **extra}])
    return Webhook(spec, f"{receiver.url}{path}", http, clock, say=lines.append)


@pytest_twisted.inlineCallbacks
def test_each_target_gets_exactly_one_message_per_event_in_its_format(receiver, http):
    # The real clock: a timeout scaled to milliseconds would retry a slow success.
    clock, lines = reactor, []
    hooks = [
        _hook(receiver, http, clock, "discord", f"/discord/{SECRET}", lines),
        _hook(receiver, http, clock, "slack", f"/slack/{SECRET}", lines),
        _hook(receiver, http, clock, "json", f"/json/{SECRET}", lines, events=["filed"]),
    ]
    zulip_url = receiver.url.replace("http://", "http://bot%40example.org:zulipKEY42@")
    [zspec] = parse_webhooks([{"format": "zulip", "url": zulip_url, "stream": "ci"}])
    hooks.append(Webhook(zspec, zulip_url + "/api/v1/messages", http, clock, say=lines.append))
    notifier = Notifier(hooks)
    notifier.notify(NOTICE)
    notifier.notify(NOTICE._replace(kind=NoticeKind.STOOD_DOWN))
    yield notifier.idle()
    assert [len(receiver.received(p)) for p in ("/discord", "/slack", "/json", "/api")] == [
        2,
        2,
        1,
        2,
    ]
    assert json.loads(receiver.received("/discord")[0].body)["allowed_mentions"]["parse"] == []
    assert "text" in json.loads(receiver.received("/slack")[0].body)
    zulip_request = receiver.received("/api")[0]
    assert zulip_request.headers["content-type"] == "application/x-www-form-urlencoded"
    expected = base64.b64encode(b"bot@example.org:zulipKEY42").decode()
    assert zulip_request.headers["authorization"] == f"Basic {expected}"
    assert json.loads(receiver.received("/json")[0].body)["event"] == "filed"
    assert lines == []


@pytest_twisted.inlineCallbacks
def test_a_failing_endpoint_is_retried_a_bounded_number_of_times_and_logged_once(receiver, http):
    clock, lines = FastClock(reactor), []
    receiver.fail("/broken", 500)
    receiver.fail("/slow", "hang")
    # Timeouts of 1000 s and 200 s on the FastClock are 1 s and 0.2 s.
    broken = _hook(receiver, http, clock, "slack", f"/broken/{SECRET}", lines, timeout=1000)
    slow = _hook(receiver, http, clock, "discord", f"/slow/{SECRET}", lines, timeout=200)
    good = _hook(receiver, http, clock, "json", f"/good/{SECRET}", lines, timeout=1000)
    notifier = Notifier([broken, slow, good])
    notifier.notify(NOTICE)  # returns at once: nothing is sent yet
    assert receiver.requests == []
    yield good.idle()
    # The good webhook got its message while the others were still retrying.
    assert len(receiver.received("/good")) == 1
    assert slow.busy  # three attempts of at least 0.2 s each
    yield notifier.idle()
    assert len(receiver.received("/broken")) == 3
    assert len(receiver.received("/slow")) == 3
    assert len(lines) == 2
    assert all(SECRET not in line for line in lines)
    assert any("HTTP 500" in line and "after 3 attempt(s)" in line for line in lines)
    assert any("timed out" in line for line in lines), lines
    assert (broken.dropped, slow.dropped, good.delivered) == (1, 1, 1)


@pytest_twisted.inlineCallbacks
def test_messages_to_one_webhook_are_spaced_and_429_is_honoured(receiver, http):
    clock, lines = FastClock(reactor), []
    hook = _hook(receiver, http, clock, "json", "/spaced", lines, min_interval=5, timeout=1000)
    for _ in range(3):
        hook.send(NOTICE)
    yield hook.idle()
    assert len(receiver.received("/spaced")) == 3
    assert sum(1 for d in clock.delays if 4 <= d <= 5) >= 2  # waited between messages
    receiver.fail("/limited", 429)
    limited = _hook(receiver, http, clock, "json", "/limited", lines, max_attempts=2, timeout=1000)
    limited.send(NOTICE)
    yield limited.idle()
    assert len(receiver.received("/limited")) == 2
    assert lines and "HTTP 429" in lines[-1]
