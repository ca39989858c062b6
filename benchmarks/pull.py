"""Benchmark: pull a local Buildbot master holding thousands of builds.

Running thousands of real builds through a worker would take far too long
on a small machine, so the history is written into a real master's
database, and the REST API then serves those rows exactly as it serves
rows a worker produced.  Two mixes of builds (``--mix``):

``shipped`` (the default) follows the shipped year's measured structure:
a history made by the simulator's generator (calibrated on CPython's 2024,
whose 552,672 builds are 31% FAILURE in 15,229 red streaks: 11,740 of one
build, 691 of two, 174 of three, 605 of four to ten, 2,019 longer, up to
785), ``--builders`` machines over ``--days`` days, with its log tails,
written straight into the stopped master's database
(:mod:`testkit.buildbot.bulk_history`, in seconds).  The pull must give
each build the blamelist, result and failed steps the history has (the
documented differences aside: whole seconds, a builder's first build
blaming its newest change), and the logs of every failing build it fetched;
a pull request's failing build whose pull request has not merged by the
end of the history waits without its logs (``import_deferred``: see
:mod:`simulator.history.deferred`), and the check counts those and finds
none whose pull request a stored change landed from.

``random`` is the earlier mix: ``--changes`` changes, written while the
master runs through Buildbot's own db API (``master.db.changes.addChange``,
``buildsets.addBuildset``, ``builds.addBuild`` / ``finishBuild``,
``steps.addStep``, ``logs.addLog`` / ``appendLog``) by a service loaded from
``master.cfg``; builders take every change, every 2nd or every 4th (as
collapsed requests would), a tenth of the fast builders' builds fail with a
regrtest-like stdio log, each its own red streak of one build (so every one
is evidence), and the filler records the blamelist each build must get.

The master is filled once, then pulled ``--runs`` times into fresh history
files; each run prints builds per second and requests per build, then their
min and median, and the cost of an incremental pull that finds nothing new.
By default a pull fetches the logs of the first few failing builds of each
red streak (what a tracker reads); ``--all-evidence`` fetches all.

``--latency-ms N`` puts :class:`testkit.latency_proxy.ProxyProcess` between
the pull and the master: every request is answered N ms later (many at once,
as over a network), and answers are remembered by request, so that after one
warm-up pull (not counted: the master's own speed, printed) the measured
pulls get the master's answers at the network's pace, not at the pace of a
Buildbot sharing two cores with the client.  Each run then also prints the
requests per failing build whose logs were read (its steps, its failed
steps' logs and tails) and per other build (pages of builds, build
requests, buildsets, changes), and the most requests the proxy held at once.

The default is the whole modelled fleet (980 builders: ``--builders 0``)
over 10 days, some 15,000 builds with the shipped year's mix: a year of
that master scaled down, its rates per build.

    python benchmarks/pull.py [--mix shipped|random] [--runs 3] [--builders 0]
        [--days 10] [--changes 1000] [--concurrency 2,4,6,8] [--page-size 1000]
        [--latency-ms 50] [--all-evidence] [--keepalive]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pull_masters import Truth, random_master, shipped_master
from benchmarks.shipped_year import min_median
from benchmarks.stopping import Terminated, say_interrupted, terminate_like_interrupt
from buildbot_revert.core.evidence import EVIDENCE_DEPTH, NOT_FETCHED, StreakDepth
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.outcomes import pull_number_of_branch
from simulator.history.deferred import landed_from
from simulator.history.importer import PAGE_SIZE, PullStats, pull
from simulator.history.rest_client import DEFAULT_CONCURRENCY, BuildbotAPI
from simulator.history.store import HistoryStore
from testkit.buildbot.harness import BuildbotHarness
from testkit.latency_proxy import ProxyCounts, ProxyProcess

FAILURE = int(Result.FAILURE)
# The requests of a failing build whose logs are read; every other request
# (pages of builds, build requests, buildsets, changes, the root) is shared
# by the pages' builds.
EVIDENCE_PATHS = ("/builds/{id}/steps", "/steps/{id}/logs", "/logs/{id}/contents")


@dataclass
class Run:
    """One pull into a fresh history file."""

    stats: PullStats
    seconds: float
    by_path: dict[str, int]
    waited: list[tuple[str, float]]
    failures: list[str]
    # The most requests the latency proxy held at once (None: no proxy).
    max_in_flight: int | None = None

    @property
    def per_build(self) -> float:
        return self.stats.requests / max(self.stats.builds, 1)

    @property
    def read(self) -> int:
        """Failing builds whose logs were read."""
        return self.stats.failing_builds - self.stats.unfetched_builds

    @property
    def per_read(self) -> float:
        """Requests for evidence per failing build whose logs were read."""
        return sum(self.by_path.get(p, 0) for p in EVIDENCE_PATHS) / max(self.read, 1)

    @property
    def per_other(self) -> float:
        """Every other request, per build whose logs were not read."""
        evidence = sum(self.by_path.get(p, 0) for p in EVIDENCE_PATHS)
        return (self.stats.requests - evidence) / max(self.stats.builds - self.read, 1)

    @property
    def builds_per_second(self) -> float:
        return self.stats.builds / self.seconds


@dataclass
class Checked:
    """The store after the pull, against the truth."""

    wrong_blamelists: int
    wrong_builds: int
    failing: int
    with_tails: int
    unfetched: int
    # Pull requests' failing builds waiting for their merge, and those of
    # them whose pull request a stored change landed from (must be none).
    waiting: int
    merged_waiting: int


def key(build: Build) -> str:
    return f"{build.builder}/{build.number}"


def structure(builds: list[Build], tags: dict[str, tuple[str, ...]]) -> str:
    """The red streaks of ``builds`` (completion order), as the lead measured the shipped year's."""
    lengths: list[int] = []
    open_: dict[str, int] = {}
    wanted = StreakDepth(EVIDENCE_DEPTH)
    merged = {n for b in builds for c in b.changes if (n := landed_from(c)) is not None}
    readable = of_pulls = of_merged = 0
    for b in builds:
        if wanted.feed(b.builder, b.result, b.branch, tags.get(b.builder, ())):
            readable += 1
            number = pull_number_of_branch(b.branch)
            of_pulls += number is not None
            of_merged += number in merged
        if b.result == FAILURE:
            open_[b.builder] = open_.get(b.builder, 0) + 1
        elif b.builder in open_:
            lengths.append(open_.pop(b.builder))
    lengths.extend(open_.values())
    failing = sum(lengths)
    early = sum(min(n, EVIDENCE_DEPTH) for n in lengths)
    total = max(len(builds), 1)
    return (
        f"{len(builds)} builds, {failing} failing ({failing / total:.1%}) in "
        f"{len(lengths)} red streaks (longest {max(lengths, default=0)}); "
        f"{early} ({early / total:.1%} of builds) among the first "
        f"{EVIDENCE_DEPTH} of their streak; {readable} ({readable / total:.1%}) failing "
        f"builds a tracker could read: {readable - of_pulls} of streaks, {of_pulls} of pull "
        f"requests, of which {of_merged} of pull requests merged (what a tracker reads)"
    )


def pull_once(url: str, path: Path, args: argparse.Namespace, concurrency: int) -> Run:
    store = HistoryStore(path, create=not path.exists())
    depth = None if args.all_evidence else EVIDENCE_DEPTH
    try:
        with BuildbotAPI(url, concurrency=concurrency, keepalive=args.keepalive or None) as api:
            started = time.perf_counter()
            stats = pull(api, store, page_size=args.page_size, evidence_depth=depth)
            seconds = time.perf_counter() - started
            waited = sorted(api.seconds_by_path.items(), key=lambda kv: -kv[1])[:5]
            return Run(stats, seconds, dict(api.requests_by_path), waited, list(api.failures))
    finally:
        store.close()


def measured_pull(
    url: str, path: Path, args: argparse.Namespace, concurrency: int, proxy: ProxyProcess | None
) -> Run:
    """:func:`pull_once`, with the most requests the proxy held at once."""
    if proxy is not None:
        proxy.reset()
    run = pull_once(url, path, args, concurrency)
    if proxy is not None:
        run.max_in_flight = proxy.counts().max_in_flight
    return run


def check_store(path: Path, truth: Truth) -> Checked:
    store = HistoryStore(path)
    try:
        got = {key(b): b for b in store.iter_builds()}
        waiting = [n for n, ids in store.bookkeeping.import_deferred().items() for _ in ids]
    finally:
        store.close()
    wrong = sum(
        1 for k, v in truth.blamelists.items() if [c.revision for c in got[k].changes] != v
    ) + sum(1 for k in truth.blamelists if k not in got)
    wrong_builds = 0
    if truth.builds is not None:
        for k, want in truth.builds.items():
            have = got.get(k)
            if have is None or (have.result, have.branch) != (want.result, want.branch):
                wrong_builds += 1
            elif have.failed_steps != NOT_FETCHED and have.failed_steps != want.failed_steps:
                wrong_builds += 1
    failing = [b for b in got.values() if b.result == FAILURE]
    unfetched = sum(1 for b in failing if b.failed_steps == NOT_FETCHED)
    merged = {n for b in got.values() for c in b.changes if (n := landed_from(c)) is not None}
    with_tails = sum(
        1
        for b in failing
        if b.failed_steps != NOT_FETCHED and any(s.log_tail for s in b.failed_steps)
    )
    return Checked(
        wrong_blamelists=wrong,
        wrong_builds=wrong_builds,
        failing=len(failing),
        with_tails=with_tails,
        unfetched=unfetched,
        waiting=len(waiting),
        merged_waiting=sum(1 for n in waiting if n in merged),
    )


def print_run(n: int, concurrency: int, run: Run) -> None:
    stats = run.stats
    print(
        f"run {n}, concurrency {concurrency}: {stats.builds} builds, {stats.changes} changes "
        f"in {run.seconds:.2f} s = "
        f"{run.builds_per_second:.0f} builds/s; {stats.requests} requests = "
        f"{run.per_build:.3f} requests/build; {stats.failing_builds} failing, "
        f"{stats.unfetched_builds} without logs fetched ({stats.deferred_builds} waiting "
        "for their pull request's merge)"
    )
    print(
        f"  requests per failing build read: {run.per_read:.2f} ({run.read} read); "
        f"per other build: {run.per_other:.4f}"
        + ("" if run.max_in_flight is None else f"; most in flight at once: {run.max_in_flight}")
    )
    shown = sorted(run.by_path.items(), key=lambda kv: -kv[1])
    print("  requests by path: " + ", ".join(f"{p} {c}" for p, c in shown))
    print(
        "  time waiting on the master, by path: "
        + ", ".join(f"{path} {secs:.1f} s" for path, secs in run.waited)
    )
    if run.failures:
        print(f"  failed attempts (retried): {len(run.failures)} {run.failures[:3]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", choices=("shipped", "random"), default="shipped")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--builders", type=int, default=0, help="shipped mix: machines (0: all, 980 builders)"
    )
    parser.add_argument("--days", type=int, default=10, help="shipped mix: days of history")
    parser.add_argument("--seed", type=int, default=2024, help="shipped mix: generator seed")
    parser.add_argument("--changes", type=int, default=1000, help="random mix: changes")
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(c) for c in text.split(",")],
        default=[DEFAULT_CONCURRENCY],
        help="requests in flight; several (2,4,6,8) are measured in turn, interleaved",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=None,
        help="answer each request this much later, through a proxy (see the module docstring)",
    )
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE)
    parser.add_argument(
        "--keepalive",
        action="store_true",
        help="keep connections open, as over HTTPS (see rest_transport)",
    )
    parser.add_argument(
        "--all-evidence", action="store_true", help="fetch every failing build's logs"
    )
    args = parser.parse_args()
    # SIGTERM unwinds like SIGINT: the harness's ``finally`` stops the master
    # and the worker (their own process groups), the temporary directory goes.
    terminate_like_interrupt()
    try:
        return benchmark(args)
    except (KeyboardInterrupt, Terminated):
        return say_interrupted("stopped the master and the worker, removed the temporary directory")


def benchmark(args: argparse.Namespace) -> int:
    """Fill the master, pull it ``--runs`` times at each concurrency (interleaved), report."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pull-bench-") as name:
        pulled = fill_and_pull(Path(name), args)
    return report(args, pulled, started)


@dataclass
class Pulled:
    """Every pull of one benchmark, and the last history file checked against the truth."""

    truth: Truth
    runs: dict[int, list[Run]]
    checked: Checked
    # The last history file pulled again, with nothing new on the master.
    again: Run
    # The red streaks of the last history file (see :func:`structure`).
    shape: str
    # What the latency proxy answered (None: no proxy).
    seen: ProxyCounts | None


def fill_and_pull(tmp: Path, args: argparse.Namespace) -> Pulled:
    """Fill a master in ``tmp`` and pull it, through the proxy if ``--latency-ms``; stop both."""
    harness: BuildbotHarness | None = None
    proxy: ProxyProcess | None = None
    try:
        fill = shipped_master if args.mix == "shipped" else random_master
        harness, truth = fill(tmp, args)
        url = harness.url
        if args.latency_ms is not None:
            proxy = ProxyProcess(harness.www_port, args.latency_ms, remember=True)
            url = proxy.url
            warm_up(url, tmp, args)
        runs: dict[int, list[Run]] = {c: [] for c in args.concurrency}
        for n in range(1, args.runs + 1):
            for c in args.concurrency:
                path = tmp / f"history-{n}-{c}.sqlite"
                runs[c].append(measured_pull(url, path, args, c, proxy))
                print_run(n, c, runs[c][-1])
        checked = check_store(path, truth)
        again = pull_once(url, path, args, c)
        return Pulled(
            truth=truth,
            runs=runs,
            checked=checked,
            again=again,
            shape=structure_of(path),
            seen=proxy.counts() if proxy is not None else None,
        )
    finally:
        if proxy is not None:
            proxy.close()
        if harness is not None:
            harness.close()


def warm_up(url: str, tmp: Path, args: argparse.Namespace) -> None:
    """One pull through the proxy, printed, so that it remembers the master's answers."""
    warm = pull_once(url, tmp / "warm-up.sqlite", args, args.concurrency[-1])
    print(
        f"warm-up pull through the proxy (the master's own answers, remembered): "
        f"{warm.stats.builds} builds in {warm.seconds:.1f} s = "
        f"{warm.builds_per_second:.0f} builds/s"
    )


def structure_of(path: Path) -> str:
    """The red streaks of the history file at ``path`` (see :func:`structure`)."""
    store = HistoryStore(path)
    try:
        tags = {b.name: b.tags for b in store.builders()}
        return structure(list(store.iter_builds()), tags)
    finally:
        store.close()


def report(args: argparse.Namespace, pulled: Pulled, started: float) -> int:
    """Print the runs' summaries and the check; 1 if the pulls differ from the truth, else 0."""
    checked, truth = pulled.checked, pulled.truth
    print(f"mix {args.mix}: {pulled.shape}")
    for c, level in pulled.runs.items():
        print_summary(args, c, level)
    if pulled.seen is not None:
        print(
            f"answered by the master, not from the proxy's memory: "
            f"{pulled.seen.requests - pulled.seen.remembered} of {pulled.seen.requests} requests"
        )
    print(
        f"  failing builds: {checked.failing}, with a stdio tail: {checked.with_tails}, "
        f"without logs fetched: {checked.unfetched}, of them pull requests' waiting for "
        f"their merge: {checked.waiting} ({checked.merged_waiting} of pull requests merged)"
    )
    print(
        f"second pull (nothing new): {pulled.again.stats.builds} builds, "
        f"{pulled.again.stats.requests} requests in {pulled.again.seconds:.2f} s"
    )
    print(
        f"blamelists differing from the truth: {checked.wrong_blamelists} of "
        f"{len(truth.blamelists)}; builds whose result, branch or fetched steps differ: "
        f"{checked.wrong_builds}"
    )
    print(f"benchmark took {time.monotonic() - started:.0f} s")
    every = [r for level in pulled.runs.values() for r in level]
    wrong = checked.wrong_blamelists or checked.wrong_builds or checked.merged_waiting
    if wrong or any(r.stats.builds != len(truth.blamelists) for r in every):
        return 1
    return 0


def print_summary(args: argparse.Namespace, concurrency: int, runs: list[Run]) -> None:
    """One concurrency's runs: min and median of the rates, the request counts' range."""
    evidence = (
        "every failing build" if args.all_evidence else f"the first {EVIDENCE_DEPTH} of each streak"
    )
    latency = "" if args.latency_ms is None else f", {args.latency_ms:g} ms a request"
    per_build = min_median([r.per_build for r in runs])
    speed = min_median([r.builds_per_second for r in runs])
    print(
        f"full pull, {len(runs)} runs (concurrency {concurrency}{latency}, pages of "
        f"{args.page_size}, logs of {evidence}): builds/s min {speed['min']:.0f} "
        f"median {speed['median']:.0f}; requests/build min {per_build['min']:.3f} "
        f"median {per_build['median']:.3f}"
    )
    shown = "" if runs[0].max_in_flight is None else "; most in flight at once: "
    print(
        f"  requests per failing build read min {min(r.per_read for r in runs):.2f}, "
        f"max {max(r.per_read for r in runs):.2f}; per other build min "
        f"{min(r.per_other for r in runs):.4f}, max {max(r.per_other for r in runs):.4f}"
        + (shown and f"{shown}{max(r.max_in_flight or 0 for r in runs)}")
    )


if __name__ == "__main__":
    sys.exit(main())
