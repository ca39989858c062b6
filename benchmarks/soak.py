"""Soak: thousands of finished builds through two real masters, under GitHub faults and a kill.

Two real Buildbot master processes share one PostgreSQL database (a fresh
one on 127.0.0.1:5432) and a real Crossbar.io WAMP router (their message
queue), each with the reporter in ``revert`` mode against the GitHub
stand-in (in this process, on 127.0.0.1).  The builds of every builder
alternate between the masters.

**The builds are not run by workers.**  Thousands of builds on real workers
would take hours, so each master loads a small service
(``testkit/buildbot/soak_driver.py``) that this script tells, over HTTP on
127.0.0.1, which change to add and which build to run; the service writes
them through the master's own data API (change, buildset, claimed build
request, build, steps, stdio logs, finished build, completed request), so
the builds are in the shared database and their ``finished`` events go
through the WAMP router to both masters exactly as real builds' would.
Everything from there on is the plugin as deployed.

The scenario (seeded): one change lands per round (sometimes two), every
builder builds it; breaking changes break one to three builders for two to
seven rounds (some real, some whose failures the core declines: the failure
names nothing, differs every build, follows a documentation-only change, or
came with another change), and single-build flakes, infrastructure faults
(a failed checkout) and neutral EXCEPTION builds are sprinkled throughout.
Meanwhile the stand-in answers some requests with 5xx, secondary rate
limits, replies slower than the client's 30 s timeout (the write still
happens) and slow replies.  After ``--kill-at`` of the builds, once a
revert is being filed (a ledger row ``filing``), the master filing it is
SIGKILLed and restarted; its builds go to the other master meanwhile.

At the end (both reporters idle, the ledger settled) the script pulls the
history back from a master's REST API with ``simulate pull`` and replays it
through the core with the plugin's settings, independently of the plugin,
and checks and prints: every revision the core proposes has exactly one
revert PR, no PR for anything else (in particular no declined streak's
change), no duplicate PR or comment, no ledger row left
``proposed``, ``pending`` or ``filing``, and each master's RSS at the end
(the reporters idle, before the pull) within 20 % of its RSS after the
soak's first 1,000 builds (every master handles every build; for the
restarted master: 1,000 builds after its restart), with its RSS every 500
builds and the kinds of object that grew most.  The last line is the
figures as JSON; the exit status is 1 if a check failed.

    python benchmarks/soak.py [--builds 5000] [--builders 16] [--seed 7] [--kill-at 0.3]

Needs PostgreSQL on 127.0.0.1:5432 (trust) and Crossbar.io
(``BUILDBOT_REVERT_CROSSBAR`` or ``crossbar`` on PATH; ``.ci/run`` installs
it).  Ctrl-C or SIGTERM stops it cleanly: the masters, the router and the
database are removed, no process is left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.soak_checks import (  # noqa: E402
    check,
    ledger,
    objects_growth,
    print_figures,
    replay,
)
from benchmarks.soak_scenario import STOPPING, Master, Scenario  # noqa: E402
from testkit.crossbar import crossbar_executable, crossbar_router  # noqa: E402
from testkit.github import Fault, GitHubStandIn, running  # noqa: E402

RSS_BASELINE_AFTER = 1000
RSS_TRACE_EVERY = 500
DRAIN_TIMEOUT = 900.0

# -- the run ----------------------------------------------------------------------


class _Terminated(Exception):
    """SIGTERM, raised in the main thread so that the ``finally`` blocks clean up."""


def _on_sigterm(signum: int, frame: Any) -> None:
    """Raise :class:`_Terminated`, so that the soak stops as on Ctrl-C."""
    raise _Terminated()


@contextlib.contextmanager
def postgres(prefix: str) -> Iterator[str]:
    """A fresh PostgreSQL database for the soak, dropped at the end."""
    from testkit.databases import postgres_database

    with postgres_database(prefix, required=True) as url:
        yield url


@dataclass
class Soak:
    """The soak under way: its masters, its scenario, and what it counted."""

    args: argparse.Namespace
    github: GitHubStandIn
    masters: list[Master]
    db_url: str
    scenario: Scenario
    rounds: int = 0
    builds: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    kill: dict[str, Any] = field(default_factory=dict)
    culprits: dict[int, str] = field(default_factory=dict)  # culprit PR number -> sha
    restarter: threading.Thread | None = None
    drive_seconds: float = 0.0
    _count: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> None:
        """Drive ``--builds`` builds round after round, killing a master mid-filing once."""
        args = self.args
        kill_at = int(args.builds * args.kill_at)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(self.masters)) as pool:
            while self.builds < args.builds:
                self.round(pool)
                self.measure()
                if self.builds >= kill_at and not self.kill:
                    self.arm_kill()
                if self.kill.get("armed") and not self.kill.get("killed"):
                    self.restarter = self.maybe_kill()
                if self.rounds % 50 == 0:
                    rate = self.builds / (time.monotonic() - started)
                    print(
                        f"  {self.builds} builds, {self.rounds} rounds, {rate:.1f} builds/s, "
                        f"masters up: {[m.name for m in self.masters if m.alive]}",
                        flush=True,
                    )
        if self.restarter is not None:
            self.restarter.join()
        self.drive_seconds = time.monotonic() - started

    def round(self, pool: ThreadPoolExecutor) -> None:
        """One round: its changes landed, then a build per builder, spread over the masters."""
        self.rounds += 1
        alive = [m for m in self.masters if m.alive]
        self.inject_faults()
        for landing in self.scenario.landings():
            number, landing.sha = self.github.add_merged_pr(
                landing.title, f"dev{self.rounds % 7}", landing.files
            )
            self.culprits[number] = landing.sha
            if landing.breakage is not None:
                landing.breakage.sha = landing.sha
            landing.ssid = alive[0].order(
                "change",
                {
                    "revision": landing.sha,
                    "author": f"Dev {self.rounds % 7} <dev@example.org>",
                    "comments": f"{landing.title} (#{number})",
                    "when": time.time(),
                    "files": list(landing.files),
                },
            )["ssid"]
            self.scenario.start(landing)
            head = landing.ssid
        per_master: dict[str, list[dict[str, Any]]] = {m.name: [] for m in alive}
        for i, builder in enumerate(self.scenario.builders):
            results, steps = self.scenario.outcome(builder)
            target = self.masters[(i + self.rounds) % len(self.masters)]
            if not target.alive:
                target = alive[(i + self.rounds) % len(alive)]
            per_master[target.name].append(
                {
                    "builder": builder,
                    "worker": f"worker-{builder}",
                    "ssid": head,
                    "results": results,
                    "steps": steps,
                }
            )
        by_name = {m.name: m for m in self.masters}
        futures = [
            pool.submit(self.send, by_name[name], orders) for name, orders in per_master.items()
        ]
        for future in futures:
            future.result()

    def send(self, master: Master, orders: list[dict[str, Any]]) -> None:
        """Send one master its builds of the round, counting them."""
        for order in orders:
            master.order("build", order)
            with self._count:
                master.builds += 1
                self.builds += 1

    def measure(self) -> None:
        """Note each master's RSS every RSS_TRACE_EVERY builds, and its baseline once due."""
        for m in self.masters:
            slot = self.builds // RSS_TRACE_EVERY
            last = m.rss_trace[-1][0] // RSS_TRACE_EVERY if m.rss_trace else 0
            if m.alive and slot > last:
                m.rss_trace.append((self.builds, m.rss_kb()))
            after = self.builds - m.started_at_build
            if m.alive and m.rss_baseline is None and after >= RSS_BASELINE_AFTER:
                m.rss_baseline, m.rss_baseline_at = m.rss_kb(), self.builds
                m.objects_baseline = m.status("objects")

    def inject_faults(self) -> None:
        """Every few rounds, queue one of GitHub's misbehaviours for the next matching request."""
        rng, gh = self.scenario.rng, self.github
        if rng.random() > 0.25:
            return
        kind = rng.choices(("5xx", "secondary", "timeout", "slow"), (40, 25, 5, 30))[0]
        method, path = rng.choice(
            (
                ("GET", "/repos/*/commits/*/pulls"),
                ("GET", "/repos/*/pulls*"),
                ("GET", "/repos/*/issues/*/comments"),
                ("POST", "/repos/*/issues/*/comments"),
                ("POST", "/graphql"),
                ("POST", "/repos/*/issues/*/labels"),
            )
        )
        fault = {
            "5xx": lambda: Fault.server_error(rng.choice((500, 502, 503))),
            "secondary": lambda: Fault.secondary_rate_limit(1),
            "timeout": lambda: Fault.slow(32.0),  # past the client's 30 s timeout
            "slow": lambda: Fault.slow(rng.uniform(0.5, 3.0)),
        }[kind]()
        gh.inject(method, path, fault)
        self.faults[f"queued {kind}"] += 1

    def arm_kill(self) -> None:
        """Make the next filing slow enough to be caught in the act."""
        self.github.inject("POST", "/graphql", Fault.slow(8.0), times=4)
        self.github.inject("POST", "/repos/*/pulls", Fault.slow(8.0), times=2)
        self.kill = {"armed": True, "armed_at_build": self.builds}

    def maybe_kill(self) -> threading.Thread | None:
        """SIGKILL a master filing a revert, if one is; the thread restarting it."""
        rows = ledger(self.db_url, "state = 'filing'")
        for row in rows:
            victim = next(
                (m for m in self.masters if m.alive and str(m.basedir) in row["master"]), None
            )
            if victim is None:
                continue
            victim.rss_before_kill = (victim.rss_baseline, victim.rss_kb())
            victim.kill()
            victim.rss_baseline = victim.rss_baseline_at = None
            self.kill.update(killed=victim.name, at_build=self.builds, revision=row["revision"])
            print(
                f"  SIGKILLed master {victim.name} at build {self.builds} while it was filing "
                f"the revert of {row['revision'][:12]}; restarting it",
                flush=True,
            )

            def restart(victim: Master = victim) -> None:
                time.sleep(3.0)
                began = time.monotonic()
                victim.start()
                victim.started_at_build = self.builds
                self.kill["restart_s"] = round(time.monotonic() - began, 1)
                print(
                    f"  master {victim.name} is back after {self.kill['restart_s']} s", flush=True
                )

            thread = threading.Thread(target=restart, daemon=True)
            thread.start()
            return thread
        return None

    def drain(self) -> float:
        """Until both reporters are idle and the ledger is settled (or the timeout)."""
        began = time.monotonic()
        quiet = 0
        while time.monotonic() - began < DRAIN_TIMEOUT:
            idle = all(m.status()["idle"] for m in self.masters)
            unsettled = ledger(self.db_url, "state IN ('proposed', 'pending', 'filing')")
            quiet = quiet + 1 if idle and not unsettled else 0
            if quiet >= 5:
                break
            time.sleep(2.0)
        return time.monotonic() - began


def main() -> int:
    """Run the soak; 0 if every check holds, 1 if one fails, 2 without Crossbar, 130 if stopped."""
    args = parse_args()
    if crossbar_executable() is None:
        print(
            "soak: Crossbar.io not found: set BUILDBOT_REVERT_CROSSBAR or put crossbar on PATH",
            file=sys.stderr,
        )
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    root = Path(tempfile.mkdtemp(prefix="bbrevert-soak-"))
    print(
        "soak: builds are written through each master's data API by a driver service in the "
        "master (testkit/buildbot/soak_driver.py), not run by workers; events, reporters, "
        "ledger and GitHub are as deployed",
        flush=True,
    )
    try:
        figures = soak_and_check(args, root)
        print_figures(figures)
        print(json.dumps(figures, default=str))
        return 0 if all(figures["checks"].values()) else 1
    except (KeyboardInterrupt, _Terminated):
        print(
            "soak: interrupted: stopped the masters and the router, dropped the database",
            file=sys.stderr,
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(root, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--builds", type=int, default=5000)
    parser.add_argument("--builders", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--kill-at", type=float, default=0.3, help="share of the builds after which to kill"
    )
    return parser.parse_args()


def soak_and_check(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Start GitHub's stand-in, the router, the database and two masters; soak; check; stop."""
    masters: list[Master] = []
    with (
        running() as github,
        crossbar_router(root / "crossbar") as router,
        postgres("bbrevert_soak") as db_url,
    ):
        soak: Soak | None = None
        try:
            names = [f"soak{i:02d}" for i in range(args.builders)]
            builders = [(n, ["stable"]) for n in names]
            workers = [f"worker-{n}" for n in names]
            for name in ("a", "b"):
                masters.append(Master(name, root, db_url, router, github, builders, workers))
            for m in masters:
                m.start()
            soak = Soak(args, github, masters, db_url, Scenario(random.Random(args.seed), names))
            print(
                f"soak: two masters up (PostgreSQL, Crossbar at {router.url}); driving "
                f"{args.builds} builds on {args.builders} builders",
                flush=True,
            )
            soak.run()
            return settle_and_check(soak, root)
        finally:
            # Stop the masters before the router and the database go.
            STOPPING.set()
            if soak is not None and soak.restarter is not None:
                soak.restarter.join()
            for m in masters:
                m.stop()


def settle_and_check(soak: Soak, root: Path) -> dict[str, Any]:
    """Drain the reporters, measure the masters, replay the pulled history; the figures."""
    drained = soak.drain()
    for m in soak.masters:
        m.rss_end, m.objects_end = m.rss_kb(), objects_growth(m)
    print(
        f"soak: drained in {drained:.0f} s; pulling the history back and "
        "replaying it through the core",
        flush=True,
    )
    report = replay(soak.masters[0], root)
    return check(soak, report)


if __name__ == "__main__":
    sys.exit(main())
