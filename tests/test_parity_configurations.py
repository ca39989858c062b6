"""Parity: a stale builder pair where one configuration passes, in both shells.

Through a real master: three builders run the same ``test`` step (each
failed it once before, a flake); after a gap since green longer than the
policy's ``stale_green_after`` (half a second here: a master stamps builds
in whole seconds), a change edits ``Lib/x.py`` and its test, and one builder
fails ``test_x`` three times while the other two build the change green.
The failure follows the configuration: the plugin, deciding live, and the
simulator, pulling the master and replaying it, both decline it as
``configuration-specific``, naming the builders that passed, and give
identical verdicts.
"""

from __future__ import annotations

import pytest
import pytest_twisted

from buildbot_revert.core.verdicts import Reason
from simulator.analysis.replay import Selection
from tests.test_parity import BUILDERS, GREEN, F, S, red, run_both

pytestmark = pytest.mark.live

DEBIAN, MACOS, REFLEAKS = (name for name, _ in BUILDERS)


def stale_pair_history() -> list[tuple]:
    """Flakes, green on change 1, a gap, then change 2 breaking Debian alone."""
    events: list[tuple] = []

    def build(name: str, tip: int | None, steps: list) -> None:
        worker = "w-" + name.replace(" ", "-")
        events.append(("build", name, F if steps is not GREEN else S, tip, steps, worker))

    events.append(("change", 1, ["Lib/x.py"], "main", "gh-1: Start x (#1)"))
    for name in (MACOS, REFLEAKS):
        # Each passing builder is known to run the test step: it failed it once.
        build(name, 1, red(f"test_flaky_{name[-5:].strip().lower()}"))
        build(name, None, GREEN)
    build(DEBIAN, 1, GREEN)
    events.append(("wait", 1.2))
    title = "gh-2: Speed up x (#2)"
    events.append(("change", 2, ["Lib/x.py", "Lib/test/test_x.py"], "main", title))
    build(MACOS, 2, GREEN)
    build(REFLEAKS, 2, GREEN)
    build(DEBIAN, 2, red("test_x"))
    build(DEBIAN, None, red("test_x"))
    build(DEBIAN, None, red("test_x"))
    return events


@pytest.mark.parametrize("guard", [True, False], ids=["on", "off"])
@pytest_twisted.inlineCallbacks
def test_a_stale_pair_where_one_configuration_passes_gives_identical_verdicts(tmp_path, guard):
    guards = "" if guard else ", 'guards': ['stale-green']"
    option = f", policy_options={{'stale_green_after': 0.5{guards}}}"
    plugin, simulated = yield from run_both(
        tmp_path, BUILDERS, stale_pair_history(), option, Selection()
    )
    [debian] = [v for v in plugin if v.builder == DEBIAN]
    assert debian.suspect is not None and debian.suspect.revision == f"{2:040x}"
    if guard:
        assert debian.reason is Reason.CONFIGURATION_SPECIFIC, debian
        assert f"built this change and passed: {REFLEAKS}, {MACOS}" in debian.explanation
    else:
        # Without the guard the file tie (Lib/x.py for test_x) lets it through.
        assert debian.reason is Reason.REVERT, debian
    assert plugin == simulated
