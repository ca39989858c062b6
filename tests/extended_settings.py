"""A machine setting added at run time, as a maintainer would add a field to ``MachineSettings``.

:func:`extend` puts in place of :class:`~buildbot_revert.core.machine_io.MachineSettings`
a subclass with one more field, ``revert_budget``, declared with
:func:`~buildbot_revert.core.options.setting` as every field is; a ``master.cfg``
can call it too (``buildbot checkconfig`` reads the file in a fresh process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import make_dataclass
from typing import Any

from buildbot_revert.core import machine_io
from buildbot_revert.core.options import Flag, setting, whole_problem

NAME = "revert_budget"
DEFAULT = 5
DOC = "at most this many reverts open at once"
HELP = "At most this many reverts open at once (as the plugin's revert_budget)."


def _budget(name: str, value: Any, earlier: Mapping[str, Any]) -> str | None:
    """A whole number of at least 1."""
    return whole_problem(name, value, low=1)


def extend() -> type:
    """Put the extended ``MachineSettings`` in place; return the one it replaced."""
    original: type = machine_io.MachineSettings
    extended = make_dataclass(
        "MachineSettings",
        [(NAME, int, setting(DEFAULT, DOC, _budget, flag=Flag(HELP)))],
        bases=(original,),
        frozen=True,
    )
    machine_io.MachineSettings = extended  # type: ignore[misc]
    return original


def restore(original: type) -> None:
    """Put the ``MachineSettings`` that :func:`extend` replaced back."""
    machine_io.MachineSettings = original  # type: ignore[misc]
