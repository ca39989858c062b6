"""The words the plugin posts on GitHub: revert PR title and body, comments.

Every text says which builders and builds failed (with links to the master's
web UI), which rule of the policy fired and why, what the reader should do,
and mentions the author of the change.  Everything that comes from commits,
logs or the master (titles, builder names, test names, explanations) is
untrusted: it goes through :mod:`.markdown` so that it can neither break the
layout, @-mention anyone nor close an issue, and the revert's title (which
is also its commit's, and a squash merge's) through
:func:`.untrusted.for_commit`.  The only mention is the culprit PR's author,
whose login comes from GitHub itself and is checked against GitHub's login
syntax before use.  Every text fits GitHub's limits (a title of 256
characters, a body of 65,536): a long commit title is cut, and says so.

Pure: the reporter passes in the links and facts, nothing here fetches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from buildbot_revert.core import feedback, markdown, references, untrusted

# The culprit's title in the revert's title (``Revert "..."``, within
# GitHub's 256), in its body, and each builder or evidence name, at most.
_TITLE_MAX = 200
_TITLE_IN_BODY = 1_000
_NAME_MAX = 200
# The verdict's explanation (the core's words, quoting test and file names).
_EXPLANATION_MAX = 5_000
# Room left in a revert body for what the GitHub adapter adds (its marker).
_ADAPTER_ROOM = 1_000


class BuildLink(NamedTuple):
    """One failing build, and its page on the master's web UI (if known)."""

    builder: str
    number: int
    url: str | None = None


class RevertContext(NamedTuple):
    """What the texts talk about."""

    revision: str
    # The change's title (first line of its commit message): untrusted.
    title: str
    pr_number: int | None
    # The culprit PR author's GitHub login (None: unknown; never mentioned then).
    author_login: str | None
    # The failing builds of every builder that qualified, first builder first.
    builds: tuple[BuildLink, ...]
    failures: int
    # The core's verdict explanation: which rule fired and why.
    explanation: str
    # What the failing builds have in common (test modules, compile errors).
    evidence: tuple[str, ...] = ()
    master_url: str | None = None


def mention(login: str | None) -> str:
    """``@login`` for a valid GitHub login, else a neutral word."""
    if login and references.is_github_login(login):
        return markdown.mention(login)
    return "the author"


def revert_title(ctx: RevertContext) -> str:
    """The revert PR's title, in git's own wording (``Revert "..."``); its commit's title too.

    Plain text on GitHub, and written into git by the revert's commit or a
    squash merge: no control or bidi character, no live mention or closing
    keyword, at most 256 characters with a long title cut and saying so.
    """
    title = untrusted.for_commit(" ".join(ctx.title.split()))
    return references.revert_title(untrusted.cut(title, _TITLE_MAX))


def _builds_list(builds: Sequence[BuildLink]) -> str:
    by_builder: dict[str, list[BuildLink]] = {}
    for link in builds:
        by_builder.setdefault(link.builder, []).append(link)
    lines = []
    for builder, links in by_builder.items():
        parts = []
        for link in links:
            label = f"#{link.number}"
            parts.append(markdown.link(label, link.url) if link.url else label)
        name = markdown.code(untrusted.cut(builder, _NAME_MAX))
        lines.append(f"- {name}: failing builds {', '.join(parts)}")
    return "\n".join(lines)


def _culprit(ctx: RevertContext) -> str:
    title = markdown.text(untrusted.cut(ctx.title, _TITLE_IN_BODY))
    what = f"{markdown.code(ctx.revision[:12])} ({title})"
    if ctx.pr_number is not None:
        what += f", merged from #{ctx.pr_number}"
    return what


def _explanation(ctx: RevertContext) -> str:
    """The verdict's explanation as Markdown prose, cut if it is very long."""
    return markdown.text(untrusted.cut(ctx.explanation, _EXPLANATION_MAX))


def _evidence(ctx: RevertContext) -> str:
    if not ctx.evidence:
        return ""
    shown = ", ".join(markdown.code(untrusted.cut(e, _NAME_MAX)) for e in ctx.evidence[:10])
    more = f" and {len(ctx.evidence) - 10} more" if len(ctx.evidence) > 10 else ""
    return f"\nWhat the failing builds have in common: {shown}{more}.\n"


def revert_body(ctx: RevertContext) -> str:
    """The revert PR's body, short enough for GitHub with the adapter's marker added."""
    builders = len({b.builder for b in ctx.builds})
    return fit(
        f"{references.MARKER}\n"
        f"This reverts {_culprit(ctx)}.\n\n"
        f"{mention(ctx.author_login)}: after this change landed, "
        f"{builders} builder(s) failed {ctx.failures} builds in a row:\n\n"
        f"{_builds_list(ctx.builds)}\n"
        f"{_evidence(ctx)}\n"
        f"**Why this PR:** {_explanation(ctx)}.\n\n"
        "**What to do:**\n"
        "- If the change did break these builders, merge this revert and reland the "
        "change with a fix.\n"
        "- If it did not (a flaky test, a broken worker), close this PR: it will not be "
        "filed again.\n"
        "- Either way, the builders above are the evidence; their logs say what failed.\n"
        "- If this revert was wrong (the change did not break them), a maintainer "
        f"comments {markdown.code(feedback.WRONG_COMMAND)} on this PR, or adds the label "
        f"{markdown.code(feedback.WRONG_LABEL)}: it is counted as a false positive of "
        "the bot's, on its dashboard.\n\n"
        "This pull request was opened by buildbot-revert, a Buildbot reporter; "
        "nothing is merged automatically.\n",
        room=_ADAPTER_ROOM,
    )


def fit(body: str, *, room: int = 0) -> str:
    """``body`` within GitHub's 65,536 characters less ``room``, cut and saying so if longer.

    The untrusted parts are cut to a sensible length first; this is the
    limit's last guard (hundreds of builders failing at once).
    """
    return untrusted.cut(body, untrusted.BODY_LIMIT - room)


def reverted_comment(ctx: RevertContext, revert_url: str, revert_number: int) -> str:
    """The comment on the culprit PR once the revert is open."""
    return fit(
        f"{_opening(ctx)}"
        f"A revert is proposed in {markdown.link(f'#{revert_number}', revert_url)}. "
        "If the change is not at fault, please say so there and close it; otherwise "
        "merge the revert and reland the change with a fix.\n"
    )


def warning_comment(ctx: RevertContext, grace_period: float, objection: str) -> str:
    """The comment that opens a grace period; ``objection`` is a phrase that stops it."""
    return fit(
        f"{_opening(ctx)}**Why:** {_explanation(ctx)}.\n\n"
        f"If these builders are still red in {_duration(grace_period)}, a revert pull "
        f"request will be opened. To stop it, fix the build, or comment "
        f"{markdown.code(objection)} here with the reason.\n"
    )


def notice_comment(ctx: RevertContext, why: str) -> str:
    """A comment that proposes no revert PR (mode ``comment``, daily cap)."""
    return fit(
        f"{_opening(ctx)}**Why:** {_explanation(ctx)}.\n\n"
        f"No revert pull request is opened ({markdown.text(why)}). Please take a look: "
        "fix the build or revert the change.\n"
    )


def manual_comment(ctx: RevertContext, reason: str, files: Sequence[str] = ()) -> str:
    """The comment when the revert cannot be made automatically."""
    listed = ""
    if files:
        shown = ", ".join(markdown.code(f) for f in files[:20])
        listed = f"\nFiles that changed since: {shown}.\n"
    return fit(
        f"{_opening(ctx)}"
        f"A revert could not be prepared automatically ({markdown.text(reason)}).{listed}\n"
        "**A manual revert is needed**, or a fix.\n"
    )


def more_builders_comment(builds: Sequence[BuildLink], failures: int) -> str:
    """The comment on the revert PR naming builders that qualified after it was opened."""
    builders = len({b.builder for b in builds})
    return fit(
        f"{references.MARKER}\n"
        f"{builders} more builder(s) failed {failures} builds in a row from this change "
        "since this pull request was opened:\n\n"
        f"{_builds_list(builds)}\n"
    )


def _opening(ctx: RevertContext) -> str:
    """Every comment on the culprit PR opens alike: who, which builds, what they share."""
    return (
        f"{references.MARKER}\n"
        f"{mention(ctx.author_login)}, this change seems to have broken the build:\n\n"
        f"{_builds_list(ctx.builds)}\n"
        f"{_evidence(ctx)}\n"
    )


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:g} hour(s)"
    if seconds >= 60:
        return f"{seconds / 60:g} minute(s)"
    return f"{seconds:g} second(s)"
