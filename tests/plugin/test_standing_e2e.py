"""End to end: an objection or the opt-out label stops a revert only from someone with standing.

A real master and worker, a real git repository and the GitHub stand-in on
127.0.0.1.  Six builders, each broken by its own change (``BREAK <builder>``),
so one master runs six grace periods at once.  When the reporter's warning
appears on a culprit's pull request, the test answers it as one person:

========================  ===========================  ===============
builder                   who says "no", how            expected
========================  ===========================  ===============
``comment-stranger``      mallory (read), a comment     revert filed
``comment-author``        ada (the author), a comment   withdrawn
``comment-maintainer``    carol (write), a comment      withdrawn
``label-stranger``        tina (triage), the label      revert filed
``label-author``          ada (the author), the label   withdrawn
``label-maintainer``      dave (maintain), the label    withdrawn
========================  ===========================  ===============

A triager may set labels on GitHub, yet below the default ``write`` her label
does not count.  The reporter asks GitHub the role of each objector but the
author's, and logs one line naming each login it ignores.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.github import DEFAULT_TOKEN, GitHubStandIn, token_secret_config
from testkit.github.state import BOT_LOGIN
from tests.plugin.test_reporter_e2e import ledger_rows, merged_pr, wait_for

pytestmark = pytest.mark.live

OPT_OUT = "skip-auto-revert"
WAIT = 240.0  # the machine is loaded: generous waits
# Each warning is answered within a poll of the builds (0.3 s, plus a REST
# round trip) of being posted (built_answering), so the grace period needs
# only to outlast that; it is what the test waits for after the last verdict.
GRACE = 15.0
# builder -> (who answers the warning, how: "comment" or "label", the ledger's end state)
SCENARIOS = {
    "comment-stranger": ("mallory", "comment", "filed"),
    "comment-author": ("ada", "comment", "withdrawn"),
    "comment-maintainer": ("carol", "comment", "withdrawn"),
    "label-stranger": ("tina", "label", "filed"),
    "label-author": ("ada", "label", "withdrawn"),
    "label-maintainer": ("dave", "label", "withdrawn"),
}
BUILDERS = tuple(BuilderSpec(name, ("stable",)) for name in SCENARIOS)


def config(github: GitHubStandIn, root: Path) -> str:
    """The plugin in mode revert with a grace period; it looks for ended ones every second."""
    secrets = token_secret_config(root)
    # follow_interval bounds how often the reporter looks for grace periods that
    # ended (else every GRACE / 4 s): each ends within a second of its deadline.
    return (
        secrets + "c['services'] = [reporters.RevertReporter(\n"
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),\n"
        f"    api_url={github.base_url!r}, mode='revert', tags=['stable'], failures=3,\n"
        f"    grace_period={GRACE!r}, daily_cap=None, opt_out_label={OPT_OUT!r},\n"
        "    follow_interval=1.0)]\n"
    )


def answer_warnings(github: GitHubStandIn, culprits: dict[str, int], answered: set[str]) -> bool:
    """Answer each warning the reporter posted since last time; whether all are answered."""
    for builder, number in culprits.items():
        if builder in answered:
            continue
        if not any(c.user == BOT_LOGIN for c in github.comments_on(number)):
            continue
        login, how, _ = SCENARIOS[builder]
        if how == "comment":
            github.comment_as(number, login, "/no-revert: this is expected, a fix is coming")
        else:
            github.label_as(number, login, OPT_OUT)
        answered.add(builder)
    return len(answered) == len(culprits)


def built_answering(harness: BuildbotHarness, sha: str, answer: Callable[[], bool]) -> None:
    """Wait until every builder built ``sha``, answering each warning as soon as it is posted.

    A warning answered only once the next revision is built would leave its
    grace period a whole round of builds less time, more on a loaded machine.
    """
    wanted = set(SCENARIOS)

    def done(builds: list[dict[str, Any]]) -> bool:
        answer()
        return wanted <= {b["builder"] for b in builds if b["got_revision"] == sha}

    harness.wait_for_builds(done, timeout=WAIT)


def story(
    github: GitHubStandIn, harness: BuildbotHarness, late: dict[str, str]
) -> dict[str, tuple[int, str]]:
    """A good change, one breaking change per builder, two more; warnings answered as they come.

    ``late`` gets each culprit whose grace period had already ended when its
    warning was answered (its ledger state then): the test's own assumption.
    """
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good, timeout=WAIT)
    culprits: dict[str, tuple[int, str]] = {}
    answered: set[str] = set()
    numbers: dict[str, int] = {}

    def answer() -> bool:
        before = set(answered)
        done = answer_warnings(github, numbers, answered)
        if answered - before:
            rows = {
                r["revision"]: r["state"] for r in ledger_rows(harness.db_url, harness.master_dir)
            }
            for builder in answered - before:
                if rows.get(culprits[builder][1]) in ("filing", "filed", "withdrawn"):
                    late[builder] = rows[culprits[builder][1]]
        return done

    for i, builder in enumerate(SCENARIOS, 2):
        module = builder.replace("-", "_")
        files = {f"{module}.py": f"BREAK {builder}\n"}
        number, sha = merged_pr(github, harness, f"gh-{i}: Change {module}", files)
        culprits[builder] = (number, sha)
        numbers[builder] = number
        built_answering(harness, sha, answer)
    for i in (20, 21):
        _, sha = merged_pr(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
        built_answering(harness, sha, answer)
    wait_for(answer, timeout=WAIT, what="every warning")
    return culprits


def test_only_the_author_and_users_with_write_permission_stop_a_revert(github, masters, tmp_path):
    github.grant("carol", "write")
    github.grant("dave", "maintain")
    github.grant("tina", "triage")
    harness = masters(builders=BUILDERS, extra_config=config(github, tmp_path))
    late: dict[str, str] = {}
    culprits = story(github, harness, late)
    assert late == {}, f"answered after the grace period ended: raise GRACE ({GRACE} s)"

    def ends() -> dict[str, str] | None:
        rows = {r["revision"]: r["state"] for r in ledger_rows(harness.db_url, harness.master_dir)}
        states = {b: rows.get(sha, "") for b, (_, sha) in culprits.items()}
        return states if all(s in ("filed", "withdrawn") for s in states.values()) else None

    states = wait_for(ends, timeout=WAIT, what="every grace period to end")
    assert states == {b: expected for b, (_, _, expected) in SCENARIOS.items()}
    reverted = {p.title for p in github.revert_pulls()}
    assert reverted == {
        f'Revert "{github.pulls[culprits[b][0]].title} (#{culprits[b][0]})"'
        for b in ("comment-stranger", "label-stranger")
    }
    log = harness.master_log.read_text(errors="replace")
    ignored = re.findall(r"ignored the (objection|opt-out label '[^']+') by '(\w+)'", log)
    assert sorted(ignored) == [("objection", "mallory"), (f"opt-out label '{OPT_OUT}'", "tina")]
    asked = {r.path.split("/")[-2] for r in github.requests_to("GET", "/repos/*/permission")}
    # The author is never asked about: her "no" always counts.
    assert asked == {"mallory", "carol", "tina", "dave"}
    assert DEFAULT_TOKEN not in log
