"""Confirmation estimates on unlabelled histories."""

from __future__ import annotations

from buildbot_revert.core.model import Build, Builder, Change
from buildbot_revert.core.policy import Policy
from simulator.analysis.confirm import FIXED_IN_PLACE, REVERTED, UNCONFIRMED, confirm, find_revert
from simulator.analysis.replay import Selection, replay_builds
from tests.simulator.reports_fixtures import COMPILE_ERROR, DAY, T0


def change(rev: str, when: float, title: str, files: tuple[str, ...] = (), message: str = ""):
    return Change(rev * 40, f"author-{rev}", title, when, None, message or title, files)


CULPRIT = change("a", T0, "gh-1: speed up dicts", ("Objects/dictobject.c",))


def test_revert_by_title_or_by_sha() -> None:
    by_title = change("r", T0 + DAY, f'Revert "{CULPRIT.title}" (#99)')
    by_sha = change("s", T0 + DAY, "undo", message=f"This reverts commit {CULPRIT.revision[:12]}.")
    other = change("t", T0 + DAY, 'Revert "gh-1: speed up"')
    earlier = change("u", T0 - DAY, f'Revert "{CULPRIT.title}"')
    assert find_revert(CULPRIT, [by_title]) == by_title
    assert find_revert(CULPRIT, [by_sha]) == by_sha
    assert find_revert(CULPRIT, [other, earlier]) is None
    too_short = change("v", T0 + DAY, "undo", message=f"This reverts commit {CULPRIT.revision[:5]}")
    assert find_revert(CULPRIT, [too_short]) is None


def _history(fix_files: tuple[str, ...], culprit: Change = CULPRIT) -> list[Build]:
    fix = change("f", T0 + 3 * DAY, "gh-1: fix it", fix_files)
    h = 6 * 3600.0
    return [
        Build("B", 1, 0, T0 - 2 * h, T0 - h, ()),
        Build("B", 2, 2, T0, T0 + h, (culprit,), COMPILE_ERROR),
        Build("B", 3, 2, T0 + h, T0 + 2 * h, (), COMPILE_ERROR),
        Build("B", 4, 2, T0 + 2 * h, T0 + 3 * h, (), COMPILE_ERROR),
        Build("B", 5, 0, T0 + 3 * DAY, T0 + 3 * DAY + h, (fix,)),
    ]


def _confirm(history: list[Build], extra: tuple[Change, ...] = ()):
    result = replay_builds(history, Policy(), Selection(), [Builder("B")])
    assert len(result.proposals()) == 1
    changes = [c for b in history for c in b.changes] + list(extra)
    return confirm(result, changes, history)


def test_fixed_in_place_when_the_green_build_touched_the_same_files() -> None:
    conf = _confirm(_history(("Objects/dictobject.c", "Lib/test/test_dict.py")))
    assert [c.how for c in conf.items] == [FIXED_IN_PLACE]
    assert conf.items[0].by == "f" * 40
    assert conf.strict_estimate == 0.0 and conf.loose_estimate == 1.0


def test_unconfirmed_when_the_fix_touched_other_files() -> None:
    conf = _confirm(_history(("Lib/os.py",)))
    assert [c.how for c in conf.items] == [UNCONFIRMED]
    assert conf.loose_estimate == 0.0 and conf.files_unknown == 0


def test_a_later_revert_wins_and_unknown_files_are_counted() -> None:
    blind = CULPRIT._replace(files=())
    revert = change("r", T0 + 5 * DAY, f'Revert "{CULPRIT.title}"')
    conf = _confirm(_history(("Objects/dictobject.c",), blind), (revert,))
    assert [(c.how, c.by) for c in conf.items] == [(REVERTED, "r" * 40)]
    assert conf.strict_estimate == 1.0
    unconfirmed = _confirm(_history(("Objects/dictobject.c",), blind))
    assert unconfirmed.files_unknown == 1 and unconfirmed.count(UNCONFIRMED) == 1
    doc = unconfirmed.as_json()
    assert "estimate" in doc["note"] and doc["estimated_precision_loose"] == 0.0
