"""The ``simulate`` command: a thin click layer over the simulator library.

It translates flags into a :class:`~buildbot_revert.core.policy.Policy`, a grace
period and a :class:`~simulator.analysis.replay.Selection`, runs the replay, and
renders the report.  Every user error (a bad date, a missing or foreign
history file, a bad regular expression, a place it cannot write) becomes one
line on stderr and exit status 2 (:mod:`simulator.cli_errors`), and is found
before the slow part starts whenever it can be.  The flags are read into
the library's values in :mod:`simulator.cli_args`, the history and report
files are handled in :mod:`simulator.cli_files`, the progress bars of the
slow parts (replay, sweep, pull) in :mod:`simulator.progress`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EVIDENCE_DEPTH
from buildbot_revert.core.policy import GUARD_NAMES, Policy
from simulator.analysis import calibration_cache
from simulator.analysis.culprit_methods import Methods
from simulator.analysis.engine import play_out
from simulator.analysis.replay import Selection
from simulator.analysis.sweep import SweepError, parse_axes
from simulator.cli_args import (
    DEFAULT_POLICY,
    declared_flag,
    machine_from_flags,
    make_policy,
    make_selection,
    other_machine_flags,
    parse_flag_duration,
    refuse_options_before_subcommand,
    settings_as_axes,
)
from simulator.cli_errors import CLIError, warn
from simulator.cli_files import (
    check_output,
    empty_window,
    open_git_repo,
    open_history,
    reading_history,
    write_output,
)
from simulator.cli_github import (
    DEFAULT_API_URL,
    GitHubOptions,
    check_options,
    github_diffs,
    lookup_outcomes,
)
from simulator.cli_history import history_group
from simulator.history import paths
from simulator.history.rest_transport import DEFAULT_CONCURRENCY, MAX_CONCURRENCY
from simulator.history.schema import META_IMPORT_EVIDENCE_DEPTH, HistoryError
from simulator.history.store import HistoryStore
from simulator.progress import pull_with_progress, replay_with_progress, sweep_with_progress
from simulator.reports.model import SweepReport, build_report
from simulator.reports.render import FORMATS, RICH_FORMATS, render_report, render_sweep

if TYPE_CHECKING:
    from simulator.history.importer import PullStats


def __getattr__(name: str) -> Any:
    # ``SHIPPED_HISTORY`` (benchmarks/ import it) depends on the environment
    # ($BUILDBOT_REVERT_DATA), so it is worked out when asked for.
    if name == "SHIPPED_HISTORY":
        return paths.shipped_history()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FORMAT_HELP = (
    "text: a summary for a terminal; json: the documented, stable report schema; "
    "markdown: a report to paste into an issue or pull request; html: one self-contained "
    "page with charts (needs --output)."
)


def builder_selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--builders``, ``--builder-names``, ``--tags`` and ``--exclude-tags``, worded once
    for the backtest and for ``pull`` (the plugin's ``builders``, ``tags`` and
    ``exclude_tags``)."""
    command = click.option(
        "--exclude-tags",
        metavar="TAG,...",
        help="Leave out builders carrying any of these tags (comma-separated), e.g. PullRequest.",
    )(command)
    command = click.option(
        "--tags", metavar="TAG,...", help="Only builders carrying all these tags (comma-separated)."
    )(command)
    command = click.option(
        "--builder-names",
        metavar="NAME,...",
        help="Only the builders with these names (comma-separated).",
    )(command)
    return click.option(
        "--builders",
        "builders_re",
        metavar="REGEX",
        help="Only builders whose name matches this regex.",
    )(command)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    package_name="buildbot-revert",
    prog_name="simulate",
    message="%(prog)s (buildbot-revert) %(version)s",
)
@click.option("--since", metavar="DATE", help="First day to replay (YYYY-MM-DD, UTC).")
@click.option("--until", metavar="DATE", help="Day after the last one to replay (YYYY-MM-DD, UTC).")
@click.option(
    "--history",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History file. Default: the shipped 2024 CPython-shaped history, generated on "
    f"first use (about 12 s) into the directory ${paths.DATA_ENV} names, else into the "
    "per-user data directory (~/.local/share/buildbot-revert on Linux).",
)
@builder_selection_options
@declared_flag("failures")
@declared_flag("grace_period")
@declared_flag("max_culprit_age")
@click.option(
    "--without-guard",
    "without_guards",
    multiple=True,
    type=click.Choice(sorted(GUARD_NAMES) + ["all"]),
    help="Switch an evidence guard off (repeatable; 'all' for the bare structural rule).",
)
@click.option(
    "--intersection/--no-intersection",
    default=DEFAULT_POLICY.intersection,
    show_default=True,
    help="Pin a first failing build of several changes to the one change that other "
    "builders failing alike hold in common (as the plugin's "
    "policy_options={'intersection': ...}).",
)
@click.option(
    "--pull-request-builds/--without-pull-request-builds",
    default=DEFAULT_POLICY.pull_request_builds,
    show_default=True,
    help="Weigh the suspect's own pull-request builds before its merge (refs/pull/N/merge): "
    "named in the verdict, and after a long gap a failure of the same test cases ties the "
    "change when no diff is known (as the plugin's "
    "policy_options={'pull_request_builds': ...}).",
)
@declared_flag("verification")
@declared_flag("bisection")
@other_machine_flags
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help=FORMAT_HELP,
)
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the report to FILE instead of stdout: checked before the replay starts, "
    "written whole at the end (never half a report).",
)
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="Compare every combination of these settings (failures, grace, max-culprit-age, "
    "and =on,off: intersection, pull-request-builds, verification, bisection); repeatable, "
    "e.g. "
    "--sweep failures=2,3,4 --sweep grace=0h,24h,7d --sweep bisection=on,off.",
)
@click.option(
    "--master",
    metavar="URL",
    help="Pull this Buildbot master's history first (incrementally; --history defaults to "
    "a per-master file in the user's cache directory).",
)
@click.option(
    "--git-repo",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    metavar="PATH",
    help="A local clone of the project: after a long gap since green, link each suspect "
    "to the failing test cases by its diff (git show), as the plugin does with GitHub's.",
)
@click.option(
    "--github",
    "github_repo",
    metavar="OWNER/NAME",
    help="Ask this GitHub repository what people did about each proposed revert (their "
    "revert or fix-forward pull requests, lead times, precision and recall). Token: "
    "$GITHUB_TOKEN or --github-token-file; answers are cached in the history file.",
)
@click.option(
    "--github-url",
    metavar="URL",
    help="GitHub's API address, for GitHub Enterprise (https://HOST/api/v3). "
    "Default: https://api.github.com.",
)
@click.option(
    "--github-token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Read the GitHub token from FILE instead of $GITHUB_TOKEN.",
)
@click.option(
    "--github-refresh",
    is_flag=True,
    help="Ask GitHub again instead of reusing the answers cached in the history file.",
)
@click.option(
    "--github-diffs",
    is_flag=True,
    help="With --github: read suspects' diffs from GitHub, as the plugin does (cached).",
)
@click.pass_context
def main(
    ctx: click.Context,
    since: str | None,
    until: str | None,
    history: Path | None,
    builders_re: str | None,
    builder_names: str | None,
    tags: str | None,
    exclude_tags: str | None,
    failures: int,
    max_culprit_age: str | None,
    fmt: str,
    output: Path | None,
    master: str | None,
    sweeps: tuple[str, ...],
    without_guards: tuple[str, ...],
    git_repo: Path | None,
    github_repo: str | None,
    github_url: str | None,
    github_token_file: Path | None,
    github_refresh: bool,
    github_diffs: bool,
    intersection: bool,
    pull_request_builds: bool,
    # The flags of the machine's declared options (core.machine_io.MachineSettings),
    # by click's names (--grace: grace).
    **machine_flags: Any,
) -> None:
    """Backtest the revert policy on a build history."""
    if ctx.invoked_subcommand is not None:
        refuse_options_before_subcommand(ctx)
        return
    selection = make_selection(since, until, builders_re, tags, builder_names, exclude_tags)
    machine = machine_from_flags(machine_flags)
    age_s = parse_flag_duration(max_culprit_age, "--max-culprit-age")
    policy = make_policy(failures, age_s, without_guards).with_changes(
        intersection=intersection, pull_request_builds=pull_request_builds
    )
    if fmt == "html" and output is None:
        raise CLIError("--format html needs --output FILE")
    check_output(output)
    specs = settings_as_axes(ctx, sweeps, machine_flags["grace"]) if sweeps else ()
    github = check_options(
        github_repo, github_url, github_token_file, github_refresh, bool(specs), github_diffs
    )
    diffs = open_git_repo(git_repo, sweeping=bool(specs), github=github_diffs)
    if master is not None:
        # The logs every replay to come reads: a sweep's policies are many.
        depth = None if specs else max(EVIDENCE_DEPTH, policy.failures)
        history, _ = pull_master(master, history, selection, evidence_depth=depth)
    # Every setting of the machine at once, in the engine's one machine per replay;
    # a sweep's grace axis (--grace among them) sets the grace period of each row.
    methods = Methods(replace(machine, grace_period=0.0) if specs else machine)
    with reading_history(history):
        if specs:
            run_sweep_command(history, policy, selection, specs, fmt, output, methods)
        else:
            run_backtest(history, policy, selection, fmt, output, github, methods, diffs)


def run_backtest(
    history: Path | None,
    policy: Policy,
    selection: Selection,
    fmt: str,
    output: Path | None,
    github: GitHubOptions | None = None,
    methods: Methods | None = None,
    diffs: DiffReader | None = None,
) -> None:
    """Replay the history, and write the report in ``fmt`` (with GitHub's outcomes if asked)."""
    store = open_history(history)
    costs = None
    reader = github_diffs(github, store)
    diffs = reader or diffs
    ahead = None
    try:
        check_evidence(store, policy.failures)
        warn_unknown_names(store, selection)
        ahead = calibration_cache.start(store)
        methods = methods if methods is not None else Methods()
        labels = store.labels() if methods.any and store.has_labels() else None
        result, costs = play_out(
            lambda cls: replay_with_progress(store, policy, selection, cls, diffs),
            methods,
            labels,
        )
        if result.builds == 0:
            warn(empty_window(store, result))
        report = build_report(
            store, result, rich=fmt in RICH_FORMATS, costs=costs, calibration=ahead
        )
        if github is not None:
            report.github = lookup_outcomes(github, store, result, report.confirmation)
            if report.github_repo is None and github.api_url == DEFAULT_API_URL:
                # Links to github.com only when that is where the answers came from.
                report.github_repo = github.repo
    finally:
        if ahead is not None:
            ahead.close()
        if reader is not None:
            reader.close()
        store.close()
    write_output(render_report(report, fmt), output)


def check_evidence(store: HistoryStore, failures: int) -> None:
    """Refuse a policy that waits for more failing builds than the pull fetched logs of."""
    depth = store.get_meta(META_IMPORT_EVIDENCE_DEPTH)
    if depth is not None and failures > int(depth):
        raise CLIError(
            f"--failures {failures}: the history holds the logs of the first {depth} failing "
            "builds of each red streak only; pull again into a new history with --all-evidence"
        )


def warn_unknown_names(store: HistoryStore, selection: Selection) -> None:
    """Say which ``--builder-names`` the history has no builder for (a typo, a renamed one)."""
    if selection.names is None:
        return
    unknown = sorted(selection.names - {b.name for b in store.builders()})
    if unknown:
        shown = ", ".join(repr(n) for n in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        warn(f"--builder-names: the history has no builder named {shown}{more}")


def run_sweep_command(
    history: Path | None,
    policy: Policy,
    selection: Selection,
    sweeps: tuple[str, ...],
    fmt: str,
    output: Path | None,
    methods: Methods | None = None,
) -> None:
    """Replay every combination the sweep specs ask for, and write the comparison."""
    try:
        axes = parse_axes(sweeps)
    except SweepError as exc:
        raise CLIError(f"--sweep: {exc}") from None
    store = open_history(history)
    try:
        warn_unknown_names(store, selection)
        sweep = sweep_with_progress(store, policy, selection, axes, methods)
    except SweepError as exc:
        raise CLIError(f"--sweep: {exc}") from None
    finally:
        store.close()
    write_output(render_sweep(SweepReport.of(sweep), fmt), output)


def pull_master(
    url: str,
    history: Path | None,
    selection: Selection,
    concurrency: int = DEFAULT_CONCURRENCY,
    evidence_depth: int | None = EVIDENCE_DEPTH,
) -> tuple[Path, PullStats]:
    """Pull ``url`` into ``history``, with a progress bar on a terminal.

    ``evidence_depth``: how many failing builds of each red streak get
    their logs fetched (None: all); see :mod:`simulator.history.importer`.
    """
    from simulator.history.importer import PullError
    from simulator.history.rest_client import BuildbotAPIError

    try:
        return pull_with_progress(url, history, selection, concurrency, evidence_depth)
    except (BuildbotAPIError, PullError, HistoryError) as exc:
        raise CLIError(str(exc)) from None


@main.command("pull")
@click.argument("url")
@click.option(
    "--history",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History file to create or update (default: a per-master file in the user's cache "
    "directory, ~/.cache/buildbot-revert on Linux). Nothing is created if the pull fails "
    "before it stores a build.",
)
@click.option(
    "--since", metavar="DATE", help="Pull builds completed from this day (YYYY-MM-DD, UTC)."
)
@builder_selection_options
@click.option(
    "--concurrency",
    type=click.IntRange(1, MAX_CONCURRENCY),
    metavar="N",
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help=f"Requests to the master in flight at once (at most {MAX_CONCURRENCY}: a master "
    "is shared with its users); lower it for a busy master.",
)
@click.option(
    "--all-evidence",
    is_flag=True,
    help=f"Fetch the logs of every failing build. By default only those of the first "
    f"{EVIDENCE_DEPTH} failing builds of each red streak, not of pull requests' builds, "
    f"are fetched (all that a policy waiting for up to {EVIDENCE_DEPTH} failures reads).",
)
def pull_command(
    url: str,
    history: Path | None,
    since: str | None,
    builders_re: str | None,
    builder_names: str | None,
    tags: str | None,
    exclude_tags: str | None,
    concurrency: int,
    all_evidence: bool,
) -> None:
    """Sync a Buildbot 4.x master's build history (URL: base or /api/v2) into a history file."""
    selection = make_selection(since, None, builders_re, tags, builder_names, exclude_tags)
    depth = None if all_evidence else EVIDENCE_DEPTH
    path, stats = pull_master(url, history, selection, concurrency, depth)
    click.echo(
        f"{path}: {stats.builds} new builds, {stats.changes} new changes "
        f"({stats.requests} requests, {stats.seconds:.1f} s)"
    )


main.add_command(history_group)


def run() -> None:
    """Console entry point that never lets a broken pipe print a traceback."""
    try:
        main()
    except BrokenPipeError:
        sys.stderr.close()


if __name__ == "__main__":
    run()
