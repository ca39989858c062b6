"""How a benchmark stops on SIGINT and SIGTERM: cleanly, leaving no process behind.

Python turns SIGINT into ``KeyboardInterrupt``, so ``finally`` blocks and
context managers run; SIGTERM's default action ends the process at once,
skipping them, and a master or worker the benchmark started would live on.
:func:`terminate_like_interrupt` makes SIGTERM raise :class:`Terminated`
instead, so both signals unwind the same way; :data:`INTERRUPTED` is the
exit status a benchmark gives after either (as a shell reports SIGINT).

A benchmark running a Twisted reactor cannot unwind by an exception raised
at an arbitrary point of the reactor: :class:`StopRequest` records the
signal instead, for the benchmark's loop to notice between builds.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

INTERRUPTED = 130


class Terminated(Exception):
    """The process received SIGTERM."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def terminate_like_interrupt() -> None:
    """From now on SIGTERM raises :class:`Terminated`, as SIGINT raises ``KeyboardInterrupt``.

    SIGINT's handler is set too: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and would not unwind.
    """
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def say_interrupted(what: str) -> int:
    """One line on stderr saying what was cleaned up; the exit status to return."""
    print(f"interrupted: {what}", file=sys.stderr)
    return INTERRUPTED


class StopRequest:
    """SIGINT or SIGTERM, noted for a reactor-driven loop to stop at its next step.

    Install it once the reactor runs (Twisted installs its own handlers when
    it starts, which stop the reactor in the middle of whatever it was doing).
    """

    def __init__(self) -> None:
        self.signal: int | None = None

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.signal = signum

    @property
    def requested(self) -> bool:
        return self.signal is not None
