"""The soak's checks: the ledger, the core's replay of the soak's builds, and the figures.

:func:`check` compares what the masters did (GitHub's pull requests and
comments, the ledger) with what the core proposes on a replay of the same
builds, and gathers the figures :func:`print_figures` prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from benchmarks.soak_scenario import Master
from testkit.processes import venv_script

if TYPE_CHECKING:
    # Only for its type: soak.py imports this module, and runs as __main__.
    from benchmarks.soak import Soak

RSS_GROWTH_LIMIT = 0.20
UNSETTLED = ("proposed", "pending", "filing")


def ledger(db_url: str, where: str = "TRUE") -> list[dict[str, Any]]:
    """The ledger's rows (``where``), none before a reporter has made the table."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("buildbot_revert_ledger"):
                return []
            rows = conn.execute(sa.text(f"SELECT * FROM buildbot_revert_ledger WHERE {where}"))
            return [dict(r._mapping) for r in rows]
    finally:
        engine.dispose()


def replay(master: Master, root: Path) -> dict[str, Any]:
    """The core's verdicts on the soak's builds, independently of the plugin: pull, then replay."""
    history = root / "soak-history.sqlite"
    env = {**os.environ, "BUILDBOT_REVERT_DATA": str(root / "data")}
    simulate = venv_script("simulate")
    subprocess.run(
        [simulate, "pull", master.url, "--history", str(history)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    since = datetime.now(UTC).strftime("%Y-%m-%d")
    out = subprocess.run(
        [
            simulate,
            "--history",
            str(history),
            "--since",
            since,
            "--tags",
            "stable",
            "--failures",
            "3",
            "--format",
            "json",
        ],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def objects_growth(master: Master, most: int = 8) -> list[tuple[str, int]]:
    """The kinds of object the master tracks most more of than at its RSS baseline."""
    if not master.objects_baseline or not master.alive:
        return []
    now = master.status("objects")
    grown = {k: n - master.objects_baseline.get(k, 0) for k, n in now.items()}
    return sorted(((k, d) for k, d in grown.items() if d > 0), key=lambda kd: -kd[1])[:most]


def check(soak: Soak, report: dict[str, Any]) -> dict[str, Any]:
    """The soak's figures, and whether each of its checks holds, against the core's ``report``."""
    gh = soak.github
    proposed = [r["revision"] for r in report["reverts"]]
    reverts = gh.revert_pulls()
    pr_revisions = []
    for pull in reverts:
        match = re.search(r"\(#(\d+)\)\"$", pull.title)
        pr_revisions.append(soak.culprits.get(int(match.group(1))) if match else None)
    rows = ledger(soak.db_url)
    states = Counter(r["state"] for r in rows)
    served = Counter(
        r.fault if r.fault != "status" else f"status {r.status}" for r in gh.requests if r.fault
    )
    rss = rss_figures(soak.masters)
    return {
        "builds": soak.builds,
        "rounds": soak.rounds,
        "changes": soak.scenario.changes,
        "builds_per_master": {m.name: m.builds for m in soak.masters},
        "drive_seconds": round(soak.drive_seconds, 1),
        "breakages": dict(Counter(b.kind for b in soak.scenario.breakages)),
        "streaks": report["summary"]["streaks"],
        "by_reason": {k: v for k, v in report["summary"]["by_reason"].items() if v},
        "proposed": len(proposed),
        "revert_prs": len(reverts),
        "comments": len(gh.comments),
        "ledger": dict(states),
        "github_requests": len(gh.requests),
        "faults_served": dict(served),
        "faults_queued": dict(soak.faults),
        "kill": {k: v for k, v in soak.kill.items() if k != "armed"},
        "rss": rss,
        "checks": checks(soak, proposed, pr_revisions, rows, rss),
    }


def rss_figures(masters: list[Master]) -> dict[str, dict[str, Any]]:
    """Each master's RSS: at its baseline, at the end, its growth, its trace and objects grown."""
    rss: dict[str, dict[str, Any]] = {}
    for m in masters:
        end = m.rss_end
        base = m.rss_baseline
        growth = (end - base) / base if end and base else None
        rss[m.name] = {
            "baseline_kb": base,
            "baseline_after_builds": m.rss_baseline_at,
            "end_kb": end,
            "growth": None if growth is None else round(growth, 3),
            "before_kill": m.rss_before_kill,
            "trace_mb": [(b, None if kb is None else round(kb / 1024)) for b, kb in m.rss_trace],
            "objects_growth": m.objects_end,
        }
    return rss


def checks(
    soak: Soak,
    proposed: list[str],
    pr_revisions: list[str | None],
    rows: list[dict[str, Any]],
    rss: dict[str, dict[str, Any]],
) -> dict[str, bool]:
    """Whether each check holds: the masters' pull requests, comments and ledger, the kill, RSS."""
    gh = soak.github
    per_revision = Counter(pr_revisions)
    declined_kinds = {b.sha for b in soak.scenario.breakages if b.kind != "real" and b.sha}
    states = Counter(r["state"] for r in rows)
    culprit_comments = Counter(
        c.issue_number for c in gh.comments if c.issue_number in soak.culprits
    )
    same_comments = Counter((c.issue_number, c.body) for c in gh.comments)
    return {
        "every proposal has exactly one PR": all(per_revision[r] == 1 for r in proposed),
        "no PR the core did not propose": all(r in proposed for r in pr_revisions),
        "no PR for a declined kind of breakage": not (
            set(pr_revisions) & (declined_kinds - set(proposed))
        ),
        "no duplicate PR": all(n == 1 for n in per_revision.values()),
        "no duplicate comment on a culprit": all(n <= 1 for n in culprit_comments.values()),
        "no comment posted twice": all(n == 1 for n in same_comments.values()),
        "no ledger row stuck": not any(states[s] for s in UNSETTLED),
        "ledger filed == proposed": sorted(r["revision"] for r in rows if r["state"] == "filed")
        == sorted(proposed),
        "master killed mid-filing and restarted": bool(soak.kill.get("killed"))
        and "restart_s" in soak.kill,
        "RSS growth <= 20 %": all(
            v["growth"] is not None and v["growth"] <= RSS_GROWTH_LIMIT for v in rss.values()
        ),
        "no GitHub contract violation": not gh.violations,
    }


def print_figures(f: dict[str, Any]) -> None:
    """Print the figures :func:`check` gathered, then each check, ok or FAIL."""
    print(
        f"builds: {f['builds']} ({f['builds_per_master']}) in {f['drive_seconds']} s, "
        f"{f['rounds']} rounds, {f['changes']} changes"
    )
    print(f"breakages planted: {f['breakages']}")
    print(
        f"core (simulate pull + replay): {f['streaks']} red streaks, {f['proposed']} proposed; "
        f"by reason {f['by_reason']}"
    )
    print(
        f"GitHub: {f['revert_prs']} revert PRs, {f['comments']} comments, "
        f"{f['github_requests']} requests, "
        f"faults served {f['faults_served']}"
    )
    print(f"ledger: {f['ledger']}")
    print(f"kill: {f['kill']}")
    for name, r in f["rss"].items():
        growth = "n/a" if r["growth"] is None else f"{r['growth']:+.1%}"
        print(
            f"master {name}: RSS {r['baseline_kb']} kB after {r['baseline_after_builds']} builds, "
            f"{r['end_kb']} kB at the end ({growth})"
            + (f"; before the kill: {r['before_kill']}" if r["before_kill"] else "")
        )
        print(f"  RSS (builds, MB): {r['trace_mb']}")
        print(f"  objects grown since the baseline (type, count): {r['objects_growth']}")
    for name, ok in f["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
