"""The simulator plays out verification and bisection from the ground truth (issue 15).

Hand-written builds, labelled as a generated history labels them, replayed
through the simulator's methods tracker: the verdicts it ends with, the
rows of the report, and what the forced builds cost.
"""

from __future__ import annotations

from buildbot_revert.core.machine_io import BisectionCaps, MachineSettings
from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.culprit_methods import MethodCosts, Methods, method_table
from simulator.analysis.engine import play_out
from simulator.analysis.play import Play
from simulator.analysis.replay import ReplayResult, Selection, replay_builds
from simulator.history.labels import Labels
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

START = 1_700_000_000.0
C1, C2 = change("c1", when=START + 500), change("c2", when=START + 501)
C3, C4 = change("c3", when=START + 502), change("c4", when=START + 503)
# Builds are ten minutes apart and take five: each forced build costs 1/12 h.
BUILD_HOURS = 300.0 / 3600


def history(spec: str) -> list[Build]:
    return builds(spec, start=START, logs=LOGS, changes={"c1": C1, "c2": C2, "c3": C3, "c4": C4})


def labelled(cause: str, culprit: str | None = None) -> Labels:
    """Labels saying why build 2 (the first failing one) and those after it failed."""
    causes = {("B", n): cause for n in (2, 3, 4)}
    culprits = {("B", n): culprit for n in (2, 3, 4)} if culprit else {}
    return Labels((), causes, culprits)


def replayed(
    spec: str, methods: Methods, labels: Labels | None
) -> tuple[ReplayResult, MethodCosts | None]:
    def replay(play: Play | None) -> ReplayResult:
        return replay_builds(history(spec), Policy(), Selection(), [Builder("B")], play)

    return play_out(replay, methods, labels)


def verdict_of(result: ReplayResult) -> Verdict:
    [verdict] = result.verdicts
    [streak] = result.streaks
    assert streak.verdict == verdict  # the streak ends with the verdict played out
    return verdict


def test_bisection_finds_the_labelled_culprit_and_says_what_it_cost() -> None:
    result, costs = replayed(
        "S:a F:c1,c2@os F@os F@os S",
        Methods(MachineSettings(bisection=BisectionCaps())),
        labelled("breakage", "c2"),
    )
    verdict = verdict_of(result)
    assert verdict.reason is Reason.REVERT_BY_BISECTION
    assert verdict.suspect == C2
    assert "bisection of the 2 changes" in verdict.explanation
    rows = {r.method: r for r in method_table(result, None, costs)}
    assert rows["bisection"].proposals == 1
    # The parent, then c1: two forced builds.
    assert rows["bisection"].build_hours == 2 * BUILD_HOURS
    assert rows["bisection"].acted_on == 1


def test_n_section_counts_the_builds_the_plugin_requests() -> None:
    spec = "S:a F:c1,c2,c3,c4@os F@os F@os S"
    labels = labelled("breakage", "c3")
    for width, batches in (
        (1, [["parent"], ["c2"], ["c3"]]),
        (3, [["parent"], ["c1", "c2", "c3"]]),
    ):
        result, costs = replayed(
            spec, Methods(MachineSettings(bisection=BisectionCaps()), width=width), labels
        )
        verdict = verdict_of(result)
        assert verdict.reason is Reason.REVERT_BY_BISECTION and verdict.suspect == C3
        rows = {r.method: r for r in method_table(result, None, costs)}
        # Every build of every batch, as core.bisection.Bisection.batch gives them.
        builds_ = sum(len(b) for b in batches)
        assert rows["bisection"].build_hours == builds_ * BUILD_HOURS
        assert f"{builds_} verification build(s)" in verdict.explanation


def test_bisection_over_a_world_change_declines_it_as_the_environment() -> None:
    result, _ = replayed(
        "S:a F:c1,c2@os F@os F@os S",
        Methods(MachineSettings(bisection=BisectionCaps())),
        labelled("infra"),
    )
    assert verdict_of(result).reason is Reason.ENVIRONMENT


def test_without_bisection_the_streak_stays_declined() -> None:
    result, costs = replayed("S:a F:c1,c2@os F@os F@os S", Methods(), labelled("breakage", "c2"))
    assert verdict_of(result).reason is Reason.MULTIPLE_CHANGES
    assert costs is None  # no method played: nothing requested, no method rows


def test_verification_withdraws_a_revert_the_world_caused() -> None:
    result, costs = replayed(
        "S:a F:c1@os F@os F@os S", Methods(MachineSettings(verification=True)), labelled("infra")
    )
    verdict = verdict_of(result)
    assert verdict.reason is Reason.ENVIRONMENT
    assert "fails the same way: the worker or the world changed" in verdict.explanation
    rows = {r.method: r for r in method_table(result, None, costs)}
    assert (rows["verification"].proposals, rows["verification"].right) == (-1, 0)
    assert rows["verification"].wrong == -1
    assert rows["verification"].build_hours == BUILD_HOURS


def test_verification_keeps_a_revert_of_the_labelled_culprit() -> None:
    result, costs = replayed(
        "S:a F:c1@os F@os F@os S",
        Methods(MachineSettings(verification=True)),
        labelled("breakage", "c1"),
    )
    assert verdict_of(result).reason is Reason.REVERT
    assert costs.withdrawn == []


def test_an_unlabelled_history_counts_and_costs_only() -> None:
    result, costs = replayed(
        "S:a F:c1,c2@os F@os F@os S", Methods(MachineSettings(bisection=BisectionCaps())), None
    )
    assert verdict_of(result).reason is Reason.MULTIPLE_CHANGES
    rows = {r.method: r for r in method_table(result, None, costs)}
    assert rows["bisection"].acted_on == 1
    assert rows["bisection"].right is None
    result, costs = replayed(
        "S:a F:c1@os F@os F@os S", Methods(MachineSettings(verification=True)), None
    )
    assert verdict_of(result).reason is Reason.REVERT
    [verification] = [r for r in method_table(result, None, costs) if r.method == "verification"]
    assert (verification.acted_on, verification.right, verification.wrong) == (1, None, None)
    # The parent and one probe, estimated.
    assert rows["bisection"].build_hours == 2 * BUILD_HOURS


def test_forced_builds_flake_as_often_as_the_builder_does() -> None:
    # Ten flaky failures before the streak: the forced builds flake too
    # (fail otherwise), which stops the bisection with nothing filed.
    spec = "F@ssl " * 10 + "S:a F:c1,c2@os F@os F@os S"
    causes = {("B", n): "flake" for n in range(1, 11)}
    causes |= {("B", n): "breakage" for n in (12, 13, 14)}
    labels = Labels((), causes, {("B", n): "c2" for n in (12, 13, 14)})
    result, _ = replayed(spec, Methods(MachineSettings(bisection=BisectionCaps())), labels)
    decided = [v for v in result.verdicts if v.first_failing_build == 12]
    assert [v.reason for v in decided] == [Reason.UNVERIFIED]
    assert "neither passed nor failed the same way" in decided[0].explanation


def test_the_sweep_gives_each_method_its_own_row() -> None:
    from buildbot_revert.core.evidence import read_evidence
    from simulator.analysis.sweep import combinations, parse_axes, run_sweep

    combos = combinations(parse_axes(["bisection=off,on"]), Policy())
    assert [c.methods.bisection for c in combos] == [False, True]
    sweep = run_sweep(
        history("S:a F:c1,c2@os F@os F@os S"),
        [Builder("B")],
        Selection(),
        combos,
        labelled("breakage", "c2"),
        evidence=read_evidence,
    )
    off, on = sweep.rows
    assert (off.reverts, off.forced_build_hours) == (0, 0.0)
    assert (on.reverts, on.forced_build_hours) == (1, 2 * BUILD_HOURS)
    assert on.as_json()["bisection"] == "on"


def test_a_bisection_the_daily_caps_cannot_hold_is_not_begun() -> None:
    capped = Methods(MachineSettings(bisection=BisectionCaps(per_builder_per_day=1)))
    result, costs = replayed("S:a F:c1,c2@os F@os F@os S", capped, labelled("breakage", "c2"))
    assert verdict_of(result).reason is Reason.MULTIPLE_CHANGES
    assert costs.build_hours == {}


def test_every_report_format_shows_each_method_as_its_own_row(tmp_path) -> None:
    import json
    import re

    from click.testing import CliRunner

    from simulator.cli import main
    from tests.simulator.reports_fixtures import make_history

    history = str(make_history(tmp_path / "h.sqlite"))

    def run(*args: str) -> str:
        res = CliRunner().invoke(main, ["--history", history, "--bisection", *args])
        assert res.exit_code == 0, res.output
        return res.stdout

    rows = json.loads(run("--format", "json"))["methods"]
    assert {"single-change", "intersection", "bisection"} <= set(rows)
    markdown = run("--format", "markdown")
    out = tmp_path / "r.html"
    run("--format", "html", "--output", str(out))
    page = out.read_text(encoding="utf-8")
    table = re.search(r"<table id=methods>(.*?)</table>", page)
    assert table is not None
    for method, row in rows.items():
        shown = f"{row['build_hours']:,.1f}"
        assert f"| {method} | {row['proposals']} |" in markdown
        assert f"<tr><td>{method}</td><td class=n>{row['proposals']:,}</td>" in table.group(1)
        assert shown in table.group(1)


def test_a_revert_beyond_the_daily_cap_becomes_a_comment_and_is_not_counted_as_filed() -> None:
    spec = "S:a F:c1@os F@os F@os S:c2 F:c3@ssl F@ssl F@ssl S"
    capped = Methods(MachineSettings(bisection=BisectionCaps(), daily_cap=1))
    result, costs = replayed(spec, capped, None)
    assert [v.reason for v in result.verdicts] == [Reason.REVERT, Reason.REVERT]
    assert result.commented == {"c3"}
    assert [p.request.revision for p in result.proposals()] == ["c1"]
    rows = {r.method: r for r in method_table(result, None, costs)}
    assert (rows["single-change"].proposals, rows["daily-cap"].proposals) == (1, -1)
    uncapped, _ = replayed(
        spec, Methods(MachineSettings(bisection=BisectionCaps(), daily_cap=2)), None
    )
    assert [p.request.revision for p in uncapped.proposals()] == ["c1", "c3"]
