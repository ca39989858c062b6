"""The reporter's settings: good ones parse, bad ones fail with one clear sentence."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from buildbot.process.properties import Interpolate, Secret
from buildbot.secrets.secret import SecretDetails
from twisted.internet import defer
from twisted.python import log

from buildbot_revert.core import defaults
from buildbot_revert.plugin.config import (
    Mode,
    SettingsError,
    describe_token,
    option_names,
    parse_arguments,
    parse_settings,
    rendered_token,
)

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghp_SECRET123"


def test_defaults_are_the_conservative_ones():
    s = parse_settings("python/cpython")
    assert s.mode is Mode.DRY_RUN
    assert s.policy.failures == 3
    assert s.machine.daily_cap == 3
    assert s.api_url == "https://api.github.com"
    assert s.watches("AMD64 Debian PGO", ["stable"])


def test_a_full_cpython_like_configuration_parses():
    s = parse_settings(
        "python/cpython",
        token=Secret("github_token"),
        api_url="https://ghe.example.org/api/v3/",
        mode="revert",
        builders=r"^(AMD64|ARM64)",
        tags=["stable", "tier-1"],
        failures=4,
        max_culprit_age=86400,
        grace_period=1800,
        daily_cap=2,
        opt_out_label="skip-revert",
        revert_labels=[":hammer: test-with-buildbots"],
        draft=True,
        policy_options={"guards": frozenset({"infra"})},
    )
    assert s.api_url == "https://ghe.example.org/api/v3"
    assert s.policy.failures == 4 and s.policy.max_culprit_age == 86400
    assert s.policy.guards == frozenset({"infra"})
    assert s.revert_labels == (":hammer: test-with-buildbots",)
    assert s.watches("AMD64 Fedora", ["stable", "tier-1", "x"])
    assert not s.watches("AMD64 Fedora", ["stable"])
    assert not s.watches("x86 Gentoo", ["stable", "tier-1"])


def test_builders_take_a_list_of_names_and_tags_can_be_excluded():
    # CPython's master keeps its branch builders' names in a list
    # (github_status_builders); the pull-request builders carry PullRequest.
    s = parse_settings(
        "python/cpython",
        builders=["AMD64 Debian PGO 3.x", "ARM64 macOS 3.13"],
        tags=["stable"],
        exclude_tags=["PullRequest"],
    )
    assert s.watched.names == frozenset({"AMD64 Debian PGO 3.x", "ARM64 macOS 3.13"})
    assert s.watched.pattern is None
    assert s.watches("AMD64 Debian PGO 3.x", ["stable", "3.x"])
    # A list names builders exactly: no regex search, no prefix.
    assert not s.watches("AMD64 Debian PGO 3.x PR", ["stable"])
    assert not s.watches("AMD64 Debian PGO 3", ["stable"])
    assert not s.watches("AMD64 Debian PGO 3.x", ["stable", "PullRequest"])
    assert not s.watches("ARM64 macOS 3.13", ["unstable"])
    # A regex with an excluded tag: every stable builder but the PR builders.
    s = parse_settings("python/cpython", builders=".", exclude_tags="PullRequest")
    assert s.watched.exclude_tags == frozenset({"PullRequest"})
    assert s.watches("AMD64 Fedora", ["stable"])
    assert not s.watches("AMD64 Fedora PR", ["PullRequest"])
    assert parse_settings("python/cpython", builders=("x",)).watched.names == frozenset({"x"})


def test_the_token_never_shows_in_the_settings_repr():
    s = parse_settings("python/cpython", token="ghp_SECRET123", mode="revert")
    assert "ghp_SECRET123" not in repr(s)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repo": "cpython"}, "repo must look like 'owner/name'"),
        ({"repo": None}, "repo must look like"),
        ({"mode": "yolo"}, "mode must be one of dry-run, comment, revert"),
        ({"mode": "revert"}, "mode 'revert' needs a token"),
        ({"builders": "("}, "builders is not a valid regular expression"),
        ({"builders": 3}, "builders must be a regular expression or a list of builder names"),
        ({"builders": ["AMD64 Debian", ""]}, "builders must be a regular expression or a list"),
        ({"builders": {"AMD64 Debian": 1}}, "builders must be a regular expression or a list"),
        ({"builders": []}, "builders must name at least one builder when it is a list"),
        ({"tags": [""]}, "tags must be a list of tag names"),
        ({"exclude_tags": [None]}, "exclude_tags must be a list of tag names, e.g. ['Pull"),
        ({"exclude_tags": 1}, "exclude_tags must be a list of tag names"),
        (
            {"tags": ["stable"], "exclude_tags": ["PullRequest", "stable"]},
            "tags and exclude_tags both name 'stable': no builder could be selected",
        ),
        ({"failures": 0}, "policy: failures must be at least 1"),
        ({"failures": "3"}, "failures must be a whole number"),
        ({"grace_period": -1}, "grace_period must be zero or positive"),
        ({"max_culprit_age": 0}, "max_culprit_age must be positive"),
        ({"daily_cap": 0}, "daily_cap must be a positive whole number"),
        ({"api_url": "ftp://x"}, "api_url must be an http(s) URL"),
        ({"revert_labels": [""]}, "revert_labels must be a non-empty label"),
        ({"revert_labels": 3}, "revert_labels must be a non-empty label"),
        ({"draft": "yes"}, "draft must be True or False"),
        ({"verification": "yes"}, "verification must be True or False"),
        ({"bisection": 3}, "bisection must be True, None or a dict of its caps"),
        ({"bisection": {"k": 2}}, "bisection has unknown settings: k"),
        ({"bisection": {"max_changes": 1}}, "bisection max_changes must be at least 2"),
        ({"bisection": {"per_day": 0}}, "bisection per_day must be a whole number of at least 1"),
        ({"forced_build_timeout": 0}, "forced_build_timeout must be positive"),
        ({"policy_options": {"intersection": 1}}, "policy: intersection is True or False"),
        ({"policy_options": {"nope": 1}}, "policy_options has unknown settings: nope"),
        ({"policy_options": {"guards": frozenset({"x"})}}, "policy: unknown guard"),
    ],
)
def test_bad_settings_fail_with_one_clear_sentence(kwargs, message):
    args = {"repo": "python/cpython", **kwargs}
    with pytest.raises(SettingsError) as info:
        parse_settings(**args)
    text = str(info.value)
    assert message in text
    assert "\n" not in text


def test_the_example_master_cfg_passes_buildbot_checkconfig_with_a_secrets_directory(tmp_path):
    # checkconfig loads master.cfg in a fresh process, with the plugin from the entry point.
    # (tests/test_master_cfg_example.py checks it on a fresh master without one.)
    cfg = tmp_path / "master.cfg"
    cfg.write_text((ROOT / "master.cfg.example").read_text())
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "github_token").write_text(TOKEN + "\n")
    (secrets / "github_token").chmod(0o600)
    buildbot = Path(sys.executable).parent / "buildbot"
    out = subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"Config file is good", out.stdout + out.stderr)
    assert TOKEN not in out.stdout + out.stderr


def test_a_bad_reporter_setting_fails_checkconfig_with_a_clear_message(tmp_path):
    text = (ROOT / "master.cfg.example").read_text()
    assert 'mode="dry-run"' in text
    cfg = tmp_path / "master.cfg"
    cfg.write_text(text.replace('mode="dry-run"', 'mode="sometimes"'))
    buildbot = Path(sys.executable).parent / "buildbot"
    out = subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode != 0
    assert "RevertReporter: mode must be one of dry-run, comment, revert" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_the_plugin_is_registered_with_buildbot():
    code = (
        "from buildbot.plugins import reporters; "
        "from buildbot_revert.plugin.reporter import RevertReporter; "
        "assert reporters.RevertReporter is RevertReporter"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------ misspelled options


def test_a_misspelled_option_is_named_with_the_nearest_one_and_every_option():
    with pytest.raises(SettingsError) as info:
        parse_arguments((), {"repo": "python/cpython", "failurs": 3}, also=("name",))
    text = str(info.value)
    assert "unknown option 'failurs' (did you mean 'failures'?)" in text
    for option in (*option_names(), "name"):
        assert option in text
    assert "unexpected keyword" not in text and "\n" not in text


def test_several_unknown_options_are_all_named():
    with pytest.raises(
        SettingsError, match=r"unknown options 'tag' \(did you mean 'tags'\?\), 'zzz'"
    ):
        parse_arguments((), {"repo": "python/cpython", "tag": "stable", "zzz": 1})


def test_too_many_or_twice_given_positional_arguments_are_explained():
    with pytest.raises(SettingsError, match=r"at most 2 positional arguments \(repo, token\)"):
        parse_arguments(("python/cpython", None, "revert"), {})
    with pytest.raises(SettingsError, match="repo is given twice"):
        parse_arguments(("python/cpython",), {"repo": "python/cpython"})


def test_every_option_of_parse_settings_is_known():
    assert option_names()[:2] == ("repo", "token")
    assert {"objection_words", "policy_options", "exclude_tags"} <= set(option_names())
    s = parse_arguments(("python/cpython", TOKEN), {"mode": "comment"})
    assert s.mode is Mode.COMMENT and s.token == TOKEN


# ------------------------------------------------------------ objection words


def test_objection_words_default_and_can_be_set():
    assert parse_settings("python/cpython").objection_words == defaults.OBJECTION_WORDS
    s = parse_settings("python/cpython", objection_words=["/no-revert", "please wait"])
    assert s.objection_words == ("/no-revert", "please wait")
    assert parse_settings("python/cpython", objection_words="/hold").objection_words == ("/hold",)


@pytest.mark.parametrize("words", [[], (), [""], ["/no-revert", "  "], [3], 3, None, {"a": 1}])
def test_bad_objection_words_fail_with_one_clear_sentence(words):
    with pytest.raises(SettingsError, match="objection_words must be a non-empty list"):
        parse_settings("python/cpython", objection_words=words)


# ------------------------------------------------------------ the token


def test_the_three_forms_of_token_are_accepted():
    # util.Secret, util.Interpolate, or a plain string read from a settings file.
    for token in (Secret("github_token"), Interpolate("%(secret:github_token)s"), TOKEN):
        assert parse_settings("python/cpython", token=token, mode="revert").token is token


def test_an_empty_token_is_no_token():
    # settings.get("github_token", "") from a settings file that lacks it.
    assert parse_settings("python/cpython", token="").token is None
    with pytest.raises(SettingsError, match="mode 'revert' needs a token"):
        parse_settings("python/cpython", token="  \n", mode="revert")


def test_a_token_of_another_type_is_refused_without_showing_it():
    class SettingsValue:  # like a settings object returned for a missing key
        def __repr__(self):
            return TOKEN

    for bad in (SettingsValue(), 12345, b"bytes"):
        with pytest.raises(SettingsError) as info:
            parse_settings("python/cpython", token=bad, mode="revert")
        assert "token must be a string or a renderable" in str(info.value)
        assert TOKEN not in str(info.value)


def test_messages_name_the_secret_never_the_value():
    assert describe_token(Secret("github_token")) == "the GitHub token secret 'github_token'"
    assert describe_token(Interpolate("%(secret:gh)s")) == "the GitHub token secret 'gh'"
    assert (
        describe_token(Interpolate("%(secret:b:-x)s%(secret:a)s"))
        == "the GitHub token secrets 'a', 'b'"
    )
    assert describe_token(Interpolate("%(prop:x)s")) == "the GitHub token (an Interpolate)"
    assert describe_token(TOKEN) == "the GitHub token"


def test_a_rendered_token_is_checked_without_showing_it():
    assert rendered_token(TOKEN + "\n") == TOKEN
    assert rendered_token(TOKEN.encode()) == TOKEN
    for bad, why in (
        (None, "it is a NoneType, not a string"),
        ("", "it is empty"),
        (" \n", "it is empty"),
        (TOKEN + " extra", "spaces or control characters"),
        (TOKEN + "\x00", "spaces or control characters"),
        (b"\xff" + TOKEN.encode(), "not ASCII"),
    ):
        with pytest.raises(SettingsError, match=why) as info:
            rendered_token(bad)
        assert TOKEN not in str(info.value)


class FakeSecrets:
    """The master's ``secrets`` service, as Buildbot's renderers use it."""

    def __init__(self, values):
        self.values = values

    def get(self, name):
        value = self.values.get(name)
        return defer.succeed(None if value is None else SecretDetails("Fake", name, value))


def reporter_with_secrets(values, *args, **kwargs):
    """A RevertReporter whose master holds ``values`` as secrets (no master runs)."""
    from buildbot_revert.plugin.reporter import RevertReporter

    reporter = RevertReporter(*args, **kwargs)
    master = SimpleNamespace(namedServices={"secrets": FakeSecrets(values)})
    reporter.parent = SimpleNamespace(master=master)
    return reporter


def render(reporter):
    """Render the reporter's token; return (result, the lines it logged)."""
    lines = []

    def observe(event):
        lines.extend(str(m) for m in event.get("message", ()))

    log.addObserver(observe)
    try:
        settings = parse_arguments((), reporter._config_kwargs)
        results = []
        # Every renderer here answers at once: the Deferred has fired on return.
        reporter._render_token(settings).addBoth(results.append)
    finally:
        log.removeObserver(observe)
    assert len(results) == 1
    return results[0], lines


def settings_file_token(tmp_path):
    """A token read as CPython's master reads its settings: from its own YAML file."""
    path = tmp_path / "settings.yaml"
    path.write_text(f"github_token: {TOKEN}\n")
    return yaml.safe_load(path.read_text()).get("github_token")


@pytest.mark.parametrize(
    "make_token",
    [
        lambda tmp_path: Secret("github_token"),
        lambda tmp_path: Interpolate("%(secret:github_token)s"),
        settings_file_token,
    ],
    ids=["util.Secret", "util.Interpolate", "settings-file string"],
)
def test_each_form_of_token_renders_to_the_string(tmp_path, make_token):
    reporter = reporter_with_secrets(
        {"github_token": TOKEN + "\n"},
        repo="python/cpython",
        token=make_token(tmp_path),
        mode="revert",
    )
    token, lines = render(reporter)
    assert token == TOKEN
    assert lines == []


@pytest.mark.parametrize(
    "token",
    [Secret("github_token"), Interpolate("%(secret:github_token)s")],
    ids=["util.Secret", "util.Interpolate"],
)
def test_a_missing_secret_is_one_line_naming_it(token):
    reporter = reporter_with_secrets({}, repo="python/cpython", token=token, mode="revert")
    result, lines = render(reporter)
    assert result is None
    assert lines == [
        "buildbot-revert: the GitHub token secret 'github_token' could not be rendered: "
        "secret key github_token is not found in any provider; mode 'revert' needs it, so "
        "nothing is done on GitHub until it is supplied and the master restarted"
    ]


def test_an_empty_secret_is_one_line_without_the_value():
    reporter = reporter_with_secrets(
        {"github_token": "\n"}, repo="python/cpython", token=Secret("github_token"), mode="comment"
    )
    result, lines = render(reporter)
    assert result is None
    assert len(lines) == 1
    assert lines[0].startswith(
        "buildbot-revert: the GitHub token secret 'github_token' is unusable: it is empty;"
    )


def test_buildbots_record_of_the_arguments_hides_a_plain_token():
    # Buildbot logs getConfigDict() when a reconfiguration fails.
    for args, kwargs in ((("python/cpython", TOKEN), {}), ((), {"repo": "x/y", "token": TOKEN})):
        reporter = reporter_with_secrets({}, *args, mode="revert", **kwargs)
        config = reporter.getConfigDict()
        assert TOKEN not in repr(config)
        assert config["kwargs"]["mode"] == "revert"
