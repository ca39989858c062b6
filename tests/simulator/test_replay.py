"""The simulator's replay of a history file: selection, warm-up, CLI errors."""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy
from simulator.analysis import replay as replay_module
from simulator.analysis.replay import Selection, replay, replay_builds
from simulator.cli import main
from simulator.collector import YOUNG_THRESHOLD
from simulator.history.store import HistoryStore
from tests.builds_dsl import builds

DAY = 86400.0
T0 = 1_704_067_200.0  # 2024-01-01T00:00:00Z
STRUCTURAL = Policy(guards=frozenset())


def write_history(
    path: Path, per_builder: dict[str, list[Build]], tags: dict[str, tuple[str, ...]]
) -> None:
    store = HistoryStore(path, create=True)
    with store.transaction():
        for name, seq in per_builder.items():
            bid = store.writer.add_builder(Builder(name, tags.get(name, ())))
            for b in seq:
                ids = [store.writer.add_change(c) for c in b.changes]
                store.writer.add_build(bid, b, ids)
    store.close()


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "h.sqlite"
    # Builder A goes green in the warm-up (December), then breaks in January.
    a = builds("S:a0 F:a1 F F S:a2 F:a3 F F", builder="A", start=T0 - 3 * DAY, step=DAY)
    # Builder B is red from December into January: a streak of the warm-up.
    b = builds("S:b0 F:b1 F F F F", builder="B", start=T0 - 4 * DAY, step=DAY)
    write_history(path, {"A": a, "B": b}, {"A": ("stable", "tier-1"), "B": ("unstable",)})
    return path


def test_the_warm_up_is_fed_but_not_reported(history: Path) -> None:
    store = HistoryStore(history)
    result = replay(store, STRUCTURAL, Selection(since=T0))
    # A's December streak and B's streak (begun in December) are not reported;
    # A's January streak is, and A is known to have been green before it.
    assert [(s.builder, s.first_failing_build, s.verdict.reason.value) for s in result.streaks] == [
        ("A", 6, "revert")
    ]
    assert result.builds == sum(1 for b in store.iter_builds(since=T0))
    everything = replay(store, STRUCTURAL, Selection())
    assert len(everything.streaks) == 3


def test_builder_regex_and_tags_select(history: Path) -> None:
    store = HistoryStore(history)
    only_b = replay(store, STRUCTURAL, Selection(builders=re.compile("^B$")))
    assert {s.builder for s in only_b.streaks} == {"B"}
    stable = replay(store, STRUCTURAL, Selection(tags=frozenset({"stable"})))
    assert [b.name for b in stable.builders] == ["A"]


def test_excluded_tags_and_names_select(history: Path) -> None:
    store = HistoryStore(history)
    no_unstable = replay(store, STRUCTURAL, Selection(exclude_tags=frozenset({"unstable"})))
    assert [b.name for b in no_unstable.builders] == ["A"]
    assert {s.builder for s in no_unstable.streaks} == {"A"}
    listed = replay(store, STRUCTURAL, Selection(names=frozenset({"B", "not in the history"})))
    assert [b.name for b in listed.builders] == ["B"]
    both = Selection(names=frozenset({"A", "B"}), exclude_tags=frozenset({"tier-1"}))
    assert [b.name for b in replay(store, STRUCTURAL, both).builders] == ["B"]


def test_the_tracker_knows_every_builders_tags_selected_or_not(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the plugin's: a builder fed only as evidence may still build pull requests."""
    made = []

    class Spy(replay_module.StreakTracker):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(kwargs["tags_of"])

    monkeypatch.setattr(replay_module, "StreakTracker", Spy)
    store = HistoryStore(history)
    replay(store, STRUCTURAL, Selection(names=frozenset({"A"})))
    (tags_of,) = made
    assert tags_of("A") == ("stable", "tier-1")
    assert tags_of("B") == ("unstable",)
    assert tags_of("C") == ()
    # Given only the selected builders (no history), the tracker knows theirs.
    replay_module.replay_builds([], STRUCTURAL, Selection(), [Builder("A", ("stable",))])
    assert made[-1]("A") == ("stable",)


def test_cli_json(history: Path) -> None:
    out = CliRunner().invoke(
        main, ["--history", str(history), "--since", "2024-01-01", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["summary"]["builders"] == 2
    assert all(s["reason"] for s in doc["streaks"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--history", "{missing}"], "no such history file"),
        (["--history", "{empty}"], "empty"),
        (["--history", "{garbage}"], "not a history file"),
        (["--history", "{foreign}"], "not a buildbot-revert history"),
        (["--history", "{good}", "--since", "yesterday"], "is not a date"),
        (["--history", "{good}", "--builders", "("], "not a regular expression"),
        (["--history", "{good}", "--failures", "0"], "--failures"),
        (["--history", "{good}", "--since", "2024-02-01", "--until", "2024-01-01"], "later"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, history: Path, args: list[str], message: str
) -> None:
    import sqlite3

    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "garbage").write_bytes(b"this is not sqlite at all" * 100)
    foreign = sqlite3.connect(tmp_path / "foreign")
    foreign.execute("CREATE TABLE t (x)")
    foreign.commit()
    foreign.close()
    names = {
        "missing": tmp_path / "missing",
        "empty": tmp_path / "empty",
        "garbage": tmp_path / "garbage",
        "foreign": tmp_path / "foreign",
        "good": history,
    }
    argv = [a.format(**names) for a in args]
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert "Traceback" not in out.output


def test_a_replay_collects_less_often_and_gives_the_collector_back() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []

    def stream(fail: bool) -> Iterator[Build]:
        for b in builds("S:a0 F:a1 F F", builder="A", start=T0, step=DAY):
            seen.append(gc.get_threshold())
            yield b
        if fail:
            raise RuntimeError("the history broke off")

    replay_builds(stream(False), STRUCTURAL, Selection(), [Builder("A")])
    assert seen and all(t[0] == YOUNG_THRESHOLD for t in seen)
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError):
        replay_builds(stream(True), STRUCTURAL, Selection(), [Builder("A")])
    assert gc.get_threshold() == before
