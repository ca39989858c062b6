"""The master's log as buildbot-revert writes it: one gate every line goes through.

A line quotes text nobody here controls: builder and worker names, commit
titles, test names read from logs, logins and GitHub's own error messages.
Written as it came, such text could drive the terminal an operator tails the
log in (ESC sequences set its title or write its clipboard), forge a second
``buildbot-revert:`` line with a newline, reorder what is read with bidi
overrides, or flood the log with one line of megabytes.  So every line goes
through :func:`say`: controls, escapes and bidi characters shown escaped
(:func:`buildbot_revert.core.untrusted.for_terminal`), and the line cut to
:data:`LINE_LIMIT` characters, saying so.  A test holds every module of the
package to it (``log.msg`` appears here only).
"""

from __future__ import annotations

from twisted.python import log

from buildbot_revert.core.untrusted import cut, for_terminal

# Longer than any line the plugin means to write (a verdict's explanation
# names a few builders and tests); a longer one is a quote gone wrong.
LINE_LIMIT = 4096


def say(text: str) -> None:
    """Write ``text`` to the master's log as one printable line of at most LINE_LIMIT."""
    log.msg(cut(for_terminal(text), LINE_LIMIT))
