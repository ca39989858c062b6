"""False-positive feedback: how a maintainer says a revert was wrong, and what counts as one.

The bot cannot know it was wrong; people on the repository can.  A revert
pull request is *reported wrong* when someone with standing (a role of at
least the configured one, ``write`` by default: the rule of
:mod:`.standing`, as for objections) comments :data:`WRONG_COMMAND` on it,
on a line of its own, or sets the label :data:`WRONG_LABEL`.  Anyone can
comment on a public pull request, so a report from someone without standing
is ignored (the plugin logs it).

A revert is a **false positive** when it was reported wrong, or when it was
merged and its change later relanded unchanged (git's ``Reapply "..."``:
the follow-up's ``relanded`` outcome): the change was fine after all.  The
weekly metrics (:mod:`.precision`) count both.

Pure: the plugin reads the comments, labels and roles; this module only
says which comments are reports and who made them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from buildbot_revert.core.references import MARKER_PREFIX

# The command a maintainer comments on a revert PR to report it wrong.
WRONG_COMMAND = "/wrong-revert"
# The label that says the same.
WRONG_LABEL = "buildbot-revert: wrong"
# The command at the start of a line, as a word of its own ("/wrong-revert:"
# and "/wrong-revert because" are reports, "/wrong-reverts" is not).
_REPORT_RE = re.compile(
    r"^\s*" + re.escape(WRONG_COMMAND) + r"(?![\w-])", re.IGNORECASE | re.MULTILINE
)


def is_report(body: str) -> bool:
    """Whether a comment's ``body`` reports the revert wrong: a line starting with the command.

    A line, not anywhere in the text: quoting the instructions ("comment
    `/wrong-revert`") in a sentence is not a report.  Our own comments carry
    the marker and are never reports.
    """
    return MARKER_PREFIX not in body and _REPORT_RE.search(body) is not None


def reporters(comments: Iterable[tuple[str | None, str]]) -> list[str | None]:
    """Who reported the revert wrong: the author of each (author, body) report, once, in order."""
    found: list[str | None] = []
    for author, body in comments:
        if is_report(body) and author not in found:
            found.append(author)
    return found
