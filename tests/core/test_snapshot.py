"""The format of the core's saved state: explicit, checked, and keyed on fields, not code.

A tracker saved and restored is the tracker that never stopped (its shared
objects still shared); a document is decoded only into the classes the
format lists, every value checked; and what keys a snapshot (format,
fields, policy) does not change when a release edits the core's comments,
but does when it renames a field.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import buildbot_revert
from buildbot_revert.core import snapshot
from buildbot_revert.core.codec import FormatError
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.core.test_diff_wants import DAY, T0, change, failing
from tests.generated import generated_builds


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Two weeks of a small synthetic fleet: breakages, flakes, guards at work."""
    path = tmp_path_factory.mktemp("snapshot") / "h.sqlite"
    return generated_builds(path, seed=11, days=14, builders=30)


def test_the_format_lists_every_field_of_every_class_it_holds():
    snapshot.check_fields()


def test_a_tracker_restored_at_any_point_decides_as_the_one_that_never_stopped(history):
    never_stopped = StreakTracker(Policy())
    expected = never_stopped.feed_all(history)
    ended = never_stopped.finish(1e12)
    assert ended
    for cut in (len(history) // 5, len(history) // 2, 4 * len(history) // 5):
        first = StreakTracker(Policy())
        before = first.feed_all(history[:cut])
        text = json.dumps(snapshot.save_tracker(first))
        restored = snapshot.restore_tracker(json.loads(text), Policy())
        assert before + restored.feed_all(history[cut:]) == expected
        assert restored.finish(1e12) == ended


def test_objects_held_in_several_places_come_back_as_one(history):
    tracker = StreakTracker(Policy())
    tracker.feed_all(history)
    saved = json.dumps(snapshot.save_tracker(tracker))
    back = snapshot.restore_tracker(json.loads(saved), Policy())
    state = back.__getstate__()
    streaks = state["_streaks"]
    assert streaks, "the history leaves some builder red"
    for name, streak in streaks.items():
        assert streak.run is state["_builders"][name].run
    for _, _, streak in state["_intersectable"].values():
        assert streak is streaks[streak.first.builder]


def test_a_document_of_another_format_or_other_fields_is_refused_as_such():
    document = snapshot.save_tracker(StreakTracker(Policy()))
    with pytest.raises(snapshot.FormatChanged, match="format 0"):
        snapshot.restore_tracker({**document, "format": 0}, Policy())
    with pytest.raises(snapshot.FormatChanged, match="other fields"):
        snapshot.restore_tracker({**document, "schema": "0" * 64}, Policy())


def _written_by(codec, version: int, schema: str, tracker: StreakTracker) -> dict:
    """A tracker's memory as a release of format ``version`` wrote it (its codec)."""
    state = tracker.__getstate__()
    values = tuple(state[name] for name, _ in snapshot._TRACKER)
    return {
        "format": version,
        "schema": schema,
        "tracker": codec.encode(values, snapshot._TRACKER_TYPE),
    }


def test_a_memory_of_format_1_is_still_read_as_it_was(history):
    tracker = StreakTracker(Policy())
    tracker.feed_all(history[:400])
    assert tracker.flaky_cases(1), "the history holds a flaky case, whose record changed"
    document = _written_by(snapshot._FORMAT_1, 1, snapshot.SCHEMA_1, tracker)
    back = snapshot.restore_tracker(json.loads(json.dumps(document)), Policy())
    assert back.red_builders() == tracker.red_builders()
    # Flaky cases come back without their runs seen (format 3 added them).
    assert [f._replace(since=()) for f in tracker.flaky_cases(10)] == back.flaky_cases(10)
    # Format 1 of fields no release wrote is refused as before.
    with pytest.raises(snapshot.FormatChanged, match="format 1 of other fields"):
        snapshot.restore_tracker({**document, "schema": snapshot.SCHEMA}, Policy())


def test_a_memory_of_format_2_is_read_its_flaky_cases_without_runs_seen(history):
    tracker = StreakTracker(Policy())
    tracker.feed_all(history[:400])
    assert any(f.since for f in tracker.flaky_cases(10))
    document = _written_by(snapshot._FORMAT_2, 2, snapshot.SCHEMA_2, tracker)
    back = snapshot.restore_tracker(json.loads(json.dumps(document)), Policy())
    assert [f._replace(since=()) for f in tracker.flaky_cases(10)] == back.flaky_cases(10)
    # And this release's format keeps them.
    again = snapshot.restore_tracker(
        json.loads(json.dumps(snapshot.save_tracker(tracker))), Policy()
    )
    assert again.flaky_cases(10) == tracker.flaky_cases(10)


def test_values_are_checked_by_the_type_their_field_declares():
    document = snapshot.save_tracker(StreakTracker(Policy()))
    values = document["tracker"]["root"]
    for bad in ({"B": 3}, [1, 2], "text", None):
        spoiled = {**document, "tracker": {"shared": [], "root": [bad, *values[1:]]}}
        with pytest.raises(FormatError):
            snapshot.restore_tracker(spoiled, Policy())
    # A builder's state pointing at a shared object that is not there.
    spoiled = {**document, "tracker": {"shared": [], "root": [{"B": 0}, *values[1:]]}}
    with pytest.raises(FormatError, match="no shared object 0"):
        snapshot.restore_tracker(spoiled, Policy())


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shared=st.lists(_JSON, max_size=3), root=_JSON)
def test_any_json_either_decodes_or_raises_a_format_error(shared, root):
    document = {
        "format": snapshot.FORMAT,
        "schema": snapshot.SCHEMA,
        "tracker": {"shared": shared, "root": root},
    }
    try:
        snapshot.restore_tracker(document, Policy())
    except FormatError:
        pass


def _keys_in(root: Path, document: str) -> dict[str, object]:
    """What a process importing the package under ``root`` makes of a saved document."""
    script = (
        "import json, sys\n"
        "from buildbot_revert.core import snapshot\n"
        "from buildbot_revert.core.policy import Policy\n"
        "out = {'schema': snapshot.SCHEMA, 'policy': snapshot.policy_digest(Policy())}\n"
        "try:\n"
        "    t = snapshot.restore_tracker(json.loads(sys.stdin.read()), Policy())\n"
        "    out['red'] = t.red_builders()\n"
        "except snapshot.FormatChanged as exc:\n"
        "    out['refused'] = str(exc)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=document,
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(done.stdout)


def _copy_package(tmp_path: Path) -> Path:
    """A copy of the installed package under ``tmp_path``: a release to edit."""
    root = tmp_path / "release"
    source = Path(buildbot_revert.__file__).parent
    shutil.copytree(source, root / "buildbot_revert", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_snapshot_saved_before_a_change_to_a_core_comment_is_kept_after_it(tmp_path, history):
    tracker = StreakTracker(Policy())
    tracker.feed_all(history)
    saved = json.dumps(snapshot.save_tracker(tracker))
    root = _copy_package(tmp_path)
    before = _keys_in(root, saved)
    guards = root / "buildbot_revert" / "core" / "memory.py"
    text = guards.read_text()
    edited = text.replace("# Forget what no window will look at again.", "# Reworded comment.")
    assert edited != text
    guards.write_text(edited + "\n# A release's new comment.\n")
    after = _keys_in(root, saved)
    assert after == before
    assert after["red"] == tracker.red_builders() and after["red"]


def test_a_snapshot_saved_before_a_field_is_renamed_is_refused_after_it(tmp_path):
    saved = json.dumps(snapshot.save_tracker(StreakTracker(Policy())))
    root = _copy_package(tmp_path)
    model = root / "buildbot_revert" / "core" / "model.py"
    text = model.read_text()
    renamed = text.replace("    worker: str | None = None\n", "    host: str | None = None\n")
    assert renamed != text
    model.write_text(renamed)
    after = _keys_in(root, saved)
    assert after["schema"] != snapshot.SCHEMA
    assert "other fields" in str(after["refused"])


def test_callbacks_attached_to_a_restored_tracker_are_what_it_decides_and_asks_with():
    # A restored tracker hands its decisions and its diffs' question the
    # callbacks the shell attaches, not the ones it was restored without.
    b = change("b", T0 + DAY)
    tracker = StreakTracker(Policy())
    tracker.feed(Build("B", 1, int(Result.SUCCESS), T0 - 60, T0))
    tracker.feed(failing("B", 2, T0 + DAY, b))
    tracker.feed(failing("B", 3, T0 + DAY + 60))
    third = failing("B", 4, T0 + DAY + 120)

    def nothing(name: str) -> bool:
        return False

    for watched, wanted, reason in ((None, (b,), Reason.REVERT), (nothing, (), Reason.NOT_WATCHED)):
        restored = snapshot.restore_tracker(snapshot.save_tracker(tracker), Policy())
        restored.attach(watched, None)
        assert restored.diffs_wanted(third) == wanted
        [verdict] = restored.feed(third)
        assert isinstance(verdict, Verdict) and verdict.reason is reason
