"""The words the follow-up posts on a revert PR: the builds' summary, the stand-down.

The summary comment is one comment, edited as results arrive; its marker
(:data:`SUMMARY_MARKER`) lets the plugin find it again after a restart.
Builder names come from the master and go through :mod:`.markdown` like
every untrusted text; each comment fits GitHub's 65,536 characters.
Pure: the plugin passes in the facts.
"""

from __future__ import annotations

from buildbot_revert.core import markdown, references, untrusted
from buildbot_revert.core.outcomes import BuilderStatus, Summary

# The hidden marker of the one summary comment on a revert PR.
SUMMARY_MARKER = f"{references.MARKER_PREFIX}:builds -->"
# The hidden marker of the comment that stands a revert PR down.
STAND_DOWN_MARKER = f"{references.MARKER_PREFIX}:stand-down -->"
# The label that marks a revert PR as no longer needed (StandDown.MARK).
NO_LONGER_NEEDED = "buildbot-revert: no longer needed"

_STATUS = {
    BuilderStatus.PASSES: "passes with the revert",
    BuilderStatus.FAILS: "**still fails** with the revert",
    BuilderStatus.WAITING: "no build of this PR yet",
}


def summary_comment(summary: Summary) -> str:
    """The one comment on the revert PR that says how its builds went."""
    lines = [SUMMARY_MARKER, "**Builds of this revert on the builders that failed:**", ""]
    for builder, status, build in summary.rows:
        where = ""
        if build is not None:
            label = f"{build.pr_builder} #{build.number}"
            where = " (" + (markdown.link(label, build.url) if build.url else markdown.text(label))
            where += ")"
        lines.append(f"- {markdown.code(builder)}: {_STATUS[status]}{where}")
    lines.append("")
    if summary.failing:
        names = ", ".join(markdown.code(b) for b in summary.failing)
        lines.append(
            f"The revert does not turn {names} green: **this revert is not the fix** "
            "there. Look at those builds before merging it."
        )
    elif summary.waiting:
        lines.append("Waiting for the other builders; this comment is updated as they finish.")
    else:
        lines.append("Every builder that failed passes with the revert: it fixes the breakage.")
    return untrusted.cut("\n".join(lines) + "\n", untrusted.BODY_LIMIT)


def stand_down_comment(why: str, closing: bool, touched: bool) -> str:
    """The comment on a revert PR that is no longer needed."""
    if closing:
        what = "Closing it: nothing was merged, and the change stays as it is."
    elif touched:
        what = (
            "It is left open because someone has worked on it; close it if it is no "
            f"longer wanted (it is labelled {markdown.code(NO_LONGER_NEEDED)})."
        )
    else:
        what = "It is left open; close it if it is no longer wanted."
    return untrusted.cut(
        f"{STAND_DOWN_MARKER}\n"
        f"**This revert is no longer needed:** {markdown.text(why)} (a fix landed, or the "
        f"breakage went away).\n\n{what}\n",
        untrusted.BODY_LIMIT,
    )
