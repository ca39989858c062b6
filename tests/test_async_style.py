"""The plugin's style: ``async def`` throughout, Protocols for the pipeline's collaborators.

Issue 45: the plugin's code is coroutines, made Deferreds with
``Deferred.fromCoroutine`` only where Twisted or Buildbot calls in (a
service's hooks, the build lock, a ``LoopingCall``, work run in the
background), never ``@defer.inlineCallbacks`` generators nor
``ensureDeferred``.  And the pipeline's collaborators are the Protocols of
``buildbot_revert/plugin/ports.py``, which the real parts must offer, a
coroutine where the Protocol says ``async def``.  The tables' rows are read
and written by coroutines too: each database run (``self._run(thd)``, the
master's ``db.pool.do``) is awaited where it is made, not handed back as a
Deferred typed ``Any``, and a clock is the ports' ``Clock``, not ``Any``.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from buildbot_revert.plugin import ports
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.filing import Filer
from buildbot_revert.plugin.follow_up import FollowUp
from buildbot_revert.plugin.gather import Gatherer
from buildbot_revert.plugin.held import HeldStore
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_followed import FollowedRows
from buildbot_revert.plugin.ledger_human import HumanRevertRows
from buildbot_revert.plugin.ledger_patches import PatchRows
from buildbot_revert.plugin.ledger_qualified import QualifiedRows
from buildbot_revert.plugin.ledger_tables import TableSet
from buildbot_revert.plugin.ledger_wrong import WrongRows

ROOT = Path(__file__).resolve().parents[1]
# Names that make a Deferred-returning generator or wrap a coroutine the old way.
OLD_STYLE = ("inlineCallbacks", "ensureDeferred")


def old_style(path: Path, root: Path = ROOT) -> list[str]:
    """Each use of an :data:`OLD_STYLE` name in ``path``, one line each."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if isinstance(node, ast.Attribute | ast.Name) and name in OLD_STYLE:
            found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_the_package_has_no_inline_callbacks_nor_ensure_deferred() -> None:
    modules = sorted((ROOT / "buildbot_revert").rglob("*.py"))
    assert len(modules) > 50, "the package's modules are where this test looks"
    assert [line for path in modules for line in old_style(path)] == []


def test_the_check_sees_an_inline_callbacks_generator(tmp_path: Path) -> None:
    old = tmp_path / "old.py"
    old.write_text(
        "from twisted.internet import defer\n\n\n"
        "@defer.inlineCallbacks\ndef f():\n    yield defer.ensureDeferred(g())\n"
    )
    assert old_style(old, tmp_path) == ["old.py:4 inlineCallbacks", "old.py:6 ensureDeferred"]
    new = tmp_path / "new.py"
    new.write_text("async def f():\n    await g()\n")
    assert old_style(new, tmp_path) == []


def members(protocol: type) -> dict[str, object]:
    """The methods and attributes ``protocol`` asks for (its own and its bases')."""
    names: dict[str, object] = {}
    for cls in reversed(protocol.__mro__):
        if cls.__module__ != ports.__name__:
            continue
        names.update({k: v for k, v in vars(cls).items() if not k.startswith("_")})
        names.update(dict.fromkeys(getattr(cls, "__annotations__", {})))
    return names


@pytest.mark.parametrize(
    ("protocol", "part"),
    [
        (ports.BuildReader, Gatherer),
        (ports.VerdictFiler, Filer),
        (ports.RevertFollower, FollowUp),
        (ports.DecisionNotes, Decisions),
    ],
)
def test_each_part_offers_its_protocol_coroutines_where_it_says(protocol: type, part: type) -> None:
    wanted = members(protocol)
    assert wanted, f"{protocol.__name__} asks for something"
    for name, declared in wanted.items():
        if not callable(declared):
            continue  # an attribute the part sets in __init__ (mypy checks its type)
        offered = getattr(part, name, None)
        assert callable(offered), f"{part.__name__} has no {name}"
        assert inspect.iscoroutinefunction(offered) == inspect.iscoroutinefunction(declared), (
            f"{part.__name__}.{name} and {protocol.__name__}.{name} disagree on async"
        )


def handed_back_runs(path: Path, root: Path = ROOT) -> list[str]:
    """Each ``self._run(...)`` in ``path`` that is not awaited where it is made, one line each."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    awaited = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Await)}
    return [
        f"{path.relative_to(root)}:{node.lineno} self._run"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_run"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and id(node) not in awaited
    ]


def untyped_clocks(path: Path, root: Path = ROOT) -> list[str]:
    """Each parameter named ``clock`` in ``path`` that is annotated ``Any``, one line each."""
    return [
        f"{path.relative_to(root)}:{node.lineno} clock: Any"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.arg)
        and node.arg == "clock"
        and isinstance(node.annotation, ast.Name)
        and node.annotation.id == "Any"
    ]


def test_every_database_run_is_awaited_and_every_clock_typed() -> None:
    modules = sorted((ROOT / "buildbot_revert").rglob("*.py"))
    assert len(modules) > 50, "the package's modules are where this test looks"
    assert [line for p in modules for line in handed_back_runs(p)] == []
    assert [line for p in modules for line in untyped_clocks(p)] == []


def test_the_checks_see_a_run_handed_back_and_a_clock_typed_any(tmp_path: Path) -> None:
    old = tmp_path / "old.py"
    old.write_text(
        "from typing import Any\n\n\n"
        "class Rows:\n"
        "    def __init__(self, run, clock: Any) -> None:\n"
        "        self._run = run\n\n"
        "    def get(self) -> Any:\n"
        "        return self._run(lambda conn: 1)\n"
    )
    assert handed_back_runs(old, tmp_path) == ["old.py:9 self._run"]
    assert untyped_clocks(old, tmp_path) == ["old.py:5 clock: Any"]
    new = tmp_path / "new.py"
    new.write_text(
        "class Rows:\n"
        "    def __init__(self, run, clock: Clock) -> None:\n"
        "        self._run = run\n\n"
        "    async def get(self) -> int:\n"
        "        return await self._run(lambda conn: 1)\n"
    )
    assert handed_back_runs(new, tmp_path) == []
    assert untyped_clocks(new, tmp_path) == []


@pytest.mark.parametrize(
    "rows",
    [
        TableSet,
        Ledger,
        QualifiedRows,
        FollowedRows,
        PatchRows,
        WrongRows,
        HumanRevertRows,
        HeldStore,
    ],
)
def test_the_ledger_and_held_rows_are_read_and_written_by_coroutines(rows: type) -> None:
    public = {k: v for k, v in vars(rows).items() if not k.startswith("_") and callable(v)}
    assert public, f"{rows.__name__} has methods"
    assert [k for k, v in public.items() if not inspect.iscoroutinefunction(v)] == []
