"""A master killed mid-filing: after a restart, exactly one revert PR.

A real master, worker and git repository with the plugin in mode
``revert``, and the GitHub stand-in answering the revert (the GraphQL
mutation) only a minute after doing it.  The master is killed with SIGKILL
once the ledger says ``filing`` and GitHub has the request in hand: the PR
exists, the master never heard.  Restarted, the reporter finds its own row
stale, looks on GitHub first, finds the PR and completes the filing (the
label, the culprit's comment, the ledger), without filing a second one.
"""

from __future__ import annotations

import os
import signal

import pytest

from testkit.buildbot.harness import harnesses
from testkit.github import Fault
from tests.plugin.test_reporter_e2e import (
    BUILDERS,
    LABEL,
    assert_token_never_leaked,
    ledger_rows,
    reporter_config,
    story,
    wait_for,
)

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live


def test_a_master_killed_while_filing_files_exactly_one_revert_after_restart(github, tmp_path):
    with harnesses(tmp_path) as make:
        harness = make(builders=BUILDERS, extra_config=reporter_config(github, tmp_path, "revert"))
        # GitHub opens the revert PR at once but answers a minute later.
        github.inject("POST", "/graphql", Fault.slow(60.0))
        number, _ = story(github, harness)

        def filing() -> bool:
            rows = ledger_rows(harness.db_url, harness.master_dir)
            asked = any(r.method == "POST" and r.path == "/graphql" for r in github.requests)
            return asked and [r["state"] for r in rows] == ["filing"]

        wait_for(filing, timeout=60, what="the ledger to say 'filing' with GitHub asked")
        assert len(github.revert_pulls()) == 1  # GitHub did it; the master never heard
        assert harness.master_proc is not None
        os.killpg(harness.master_proc.pid, signal.SIGKILL)
        harness.master_proc.wait(10)
        harness.master_proc = None
        assert [r["state"] for r in ledger_rows(harness.db_url, harness.master_dir)] == ["filing"]

        harness.start()
        [row] = wait_for(
            lambda: [
                r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] == "filed"
            ],
            timeout=60,
            what="the restarted master to complete the filing",
        )
        [revert] = github.revert_pulls()
        assert row["revert_pr"] == revert.number
        assert LABEL in revert.labels
        [comment] = github.comments_on(number)
        assert f"#{revert.number}" in comment.body
        log = harness.master_log.read_text(errors="replace")
        assert "was left 'filing'" in log
        assert_token_never_leaked(github, harness)
