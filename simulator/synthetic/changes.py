"""The changes of the shipped history: who makes them and what they say.

Each change gets an author from a skewed set of fictional core developers
and contributors (the history must not pin made-up breakages on real
people), a CPython-style title ``gh-NNNNN: ... (#NNNNN)``, a message, the
files it touched and its pull request number; reverts, fix-forwards,
relands and backports are worded after the change they follow.  When
changes land is :mod:`simulator.synthetic.rhythm`'s; what they touch,
:mod:`simulator.synthetic.areas`'.  Every number here is an assumption
unless ``history/README.md`` cites a source for it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from simulator.synthetic.areas import AREAS, Area


@dataclass
class ChangeRec:
    """A change while the generator works on it (ids are given at the end)."""

    when: float
    revision: str
    author: str
    title: str
    message: str
    files: tuple[str, ...]
    pr_number: int
    area: str
    kind: str = "normal"  # normal, revert, fix, reland, backport
    index: int = -1  # position among the changes of its branch
    branch: str = "main"
    # Set on the culprit of a breakage: the ids of the breakages it caused.
    breaks: list[int] = field(default_factory=list)


# A change index no branch reaches: "not fixed before the end", "red all along".
NEVER_INDEX = 1 << 62


def docs_only(change: ChangeRec) -> bool:
    """Whether ``change`` touched only documentation (``Doc/``, ``Misc/NEWS.d/``)."""
    return bool(change.files) and all(f.startswith(("Doc/", "Misc/NEWS.d/")) for f in change.files)


def landing_order(change: ChangeRec) -> tuple[float, str]:
    """The sort key of changes in the order they landed (the revision breaks ties)."""
    return change.when, change.revision


def number_in_landing_order(changes: list[ChangeRec]) -> None:
    """Sort one branch's ``changes`` as they landed and number them (``index``)."""
    changes.sort(key=landing_order)
    for index, change in enumerate(changes):
        change.index = index


_VERBS = {
    "c": ("Fix", "Fix", "Optimize", "Add", "Refactor", "Remove", "Use", "Avoid", "Clean up"),
    "py": ("Fix", "Fix", "Add", "Improve", "Deprecate", "Support", "Remove", "Speed up"),
    "doc": ("Docs: Improve", "Docs: Fix", "Docs: Clarify", "Docs: Document", "Docs: Update"),
    "build": ("Fix", "Update", "Add", "Simplify", "Remove"),
}

# Fictional authors, most active first.  A Zipf-like weight gives the real
# shape of a core team: a few people land most changes, a long tail lands one.
_CORE = (
    "vkovacs",
    "sergei-ostrov",
    "ealund",
    "awainwright",
    "pviktorin",
    "bpicard",
    "hvanrossen",
    "jzielinski",
    "nsobolev",
    "pgalindo",
    "mshanahan",
    "scolberg",
    "kfidgett",
    "esnowden",
    "szubair",
    "gvanderberg",
    "dhcorona",
    "mbdoom",
    "bbucher",
    "ikatriel",
    "bgarney",
    "tremark",
    "kintensity",
    "smlarson",
    "ndeily",
    "rkeith",
    "mhsmithers",
    "kaditya",
    "ggaotian",
    "rhettinger-r",
    "tjreedy-t",
    "lambv",
    "tyhg",
    "inada-m",
    "filipe-l",
    "vsajeev",
    "skirpich",
    "diegor",
    "ericvs",
    "jaraco-j",
)
_FIRST = (
    "alex",
    "maria",
    "chen",
    "priya",
    "tom",
    "ines",
    "omar",
    "yuki",
    "lena",
    "raj",
    "sofia",
    "noah",
    "amir",
    "julia",
    "kofi",
    "emma",
    "ivan",
    "mei",
    "lucas",
    "zara",
)
_LAST = (
    "smith",
    "nguyen",
    "kumar",
    "garcia",
    "novak",
    "tanaka",
    "okafor",
    "berg",
    "rossi",
    "haddad",
    "kim",
    "silva",
    "weber",
    "ali",
    "costa",
    "meyer",
    "sato",
    "lopez",
)

# CPython's backport bot: it opens (and, once approved, merges) the backport
# PRs of changes labelled "needs backport to 3.x".  A bot, not a person.
BACKPORT_BOT = "miss-islington"


class ChangeFactory:
    """Makes the content of changes: authors, titles, files, PR numbers."""

    def __init__(
        self, rng: random.Random, start: float, end: float, used_prs: set[int] | None = None
    ) -> None:
        self.rng = rng
        self.start, self.end = start, end
        contributors = sorted({f"{rng.choice(_FIRST)}{rng.choice(_LAST)}" for _ in range(300)})
        self.authors = list(_CORE) + contributors
        # Zipf weights over the core team, then a flat long tail: about 70 %
        # of changes come from the core team (assumption).
        core_w = [1.0 / (i + 1) ** 0.9 for i in range(len(_CORE))]
        scale = 0.7 / sum(core_w)
        tail = 0.3 / len(contributors)
        self.weights = [w * scale for w in core_w] + [tail] * len(contributors)
        self.area_weights = [a.weight for a in AREAS]
        # PR numbers are unique across factories that share this set (main's
        # and the backports').
        self.used_prs: set[int] = set() if used_prs is None else used_prs

    def revision(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"

    def _pr_for(self, when: float, opened_after: float | None = None) -> int:
        # PR numbers grew from about #113,500 to #128,400 over 2024 (assumption
        # read off GitHub's numbering); a PR is opened days before it merges,
        # and a follow-up (fix, revert, backport) not before what it follows.
        opened = when - self.rng.expovariate(1 / (6 * 86400))
        if opened_after is not None:
            opened = min(when, max(opened, opened_after))
        frac = (opened - self.start) / (365 * 86400)
        pr = int(113_500 + frac * 14_900) + self.rng.randint(0, 40)
        while pr in self.used_prs:
            pr += 1
        self.used_prs.add(pr)
        return pr

    def normal(self, when: float) -> ChangeRec:
        rng = self.rng
        area = rng.choices(AREAS, self.area_weights)[0]
        author = rng.choices(self.authors, self.weights)[0]
        pr = self._pr_for(when)
        issue = pr - rng.randint(1, 2500)
        noun = rng.choice(area.nouns)
        verb = rng.choice(_VERBS[area.lang])
        subject = f"{verb} {noun}"
        if area.lang == "doc" and rng.random() < 0.5:
            title = f"{subject} (#{pr})"
        else:
            title = f"gh-{issue}: {subject} (#{pr})"
        n_files = 1 + min(int(rng.expovariate(0.7)), len(area.files) - 1)
        files = sorted(rng.sample(area.files, n_files))
        if area.lang in ("c", "py"):
            if area.tests and rng.random() < 0.7:
                files.append(f"Lib/test/{rng.choice(area.tests)}.py")
            files.append(f"Misc/NEWS.d/next/{_news_section(area)}/{_news_name(rng, when, issue)}")
        body = rng.choice(_BODIES).format(noun=noun, issue=issue)
        message = f"{title}\n\n{body}"
        if rng.random() < 0.25:
            other = rng.choices(self.authors, self.weights)[0]
            message += f"\n\nCo-authored-by: {other} <{other}@users.noreply.github.com>"
        return ChangeRec(when, self.revision(), author, title, message, tuple(files), pr, area.name)

    def revert(self, when: float, culprit: ChangeRec) -> ChangeRec:
        """A revert of ``culprit`` on its branch, by one of the most active core developers."""
        pr = self._pr_for(when, opened_after=culprit.when)
        author = self.rng.choices(self.authors[:12])[0]
        title = f'Revert "{culprit.title}" (#{pr})'
        message = (
            f"{title}\n\nThis reverts commit {culprit.revision}.\n\n"
            f"It broke the buildbots (see #{culprit.pr_number})."
        )
        return ChangeRec(
            when,
            self.revision(),
            author,
            title,
            message,
            culprit.files,
            pr,
            culprit.area,
            kind="revert",
            branch=culprit.branch,
        )

    def fix_forward(
        self, when: float, culprit: ChangeRec, what: str, author: str | None = None
    ) -> ChangeRec:
        """A fix of ``culprit``'s breakage on its branch, by ``author`` or someone likely."""
        rng = self.rng
        pr = self._pr_for(when, opened_after=culprit.when)
        issue = _issue_of(culprit) or pr - rng.randint(1, 300)
        # Usually the culprit's author fixes it (the original author when the
        # culprit is a bot's backport), otherwise another core developer.
        someone_else = rng.random() >= 0.6
        fixer = author or culprit.author
        if someone_else or fixer == BACKPORT_BOT:
            fixer = rng.choices(self.authors[:15])[0]
        prefix = "" if culprit.branch == "main" else f"[{culprit.branch}] "
        title = f"{prefix}gh-{issue}: Fix {what} after #{culprit.pr_number} (#{pr})"
        touched = [f for f in culprit.files if not f.startswith("Misc/NEWS.d/")] or list(
            culprit.files
        )
        files = tuple(sorted(rng.sample(touched, max(1, min(len(touched), rng.randint(1, 2))))))
        message = f"{title}\n\nFollow-up to {culprit.revision[:10]}: {what}."
        return ChangeRec(
            when,
            self.revision(),
            fixer,
            title,
            message,
            files,
            pr,
            culprit.area,
            kind="fix",
            branch=culprit.branch,
        )

    def backport(self, when: float, original: ChangeRec, branch: str, bot: bool) -> ChangeRec:
        """``original`` cherry-picked onto ``branch``, the way miss-islington does it.

        The title is CPython's backport form, ``[3.13] gh-N: ... (GH-<main PR>)
        (#<backport PR>)``; the message keeps the original's body and ends with
        the ``(cherry picked from commit ...)`` line.  A bot backport credits
        the original author as co-author; a manual one is by the author.
        """
        # The bot opens the backport PR when the original merges.
        pr = self._pr_for(when, opened_after=original.when)
        base = original.title.rsplit(" (#", 1)[0]
        title = f"[{branch}] {base} (GH-{original.pr_number}) (#{pr})"
        body = original.message.split("\n\n", 1)[1] + "\n" if "\n\n" in original.message else ""
        message = f"{title}\n\n{body}(cherry picked from commit {original.revision})"
        author = original.author
        if bot:
            author = BACKPORT_BOT
            message += (
                f"\n\nCo-authored-by: {original.author}"
                f" <{original.author}@users.noreply.github.com>"
            )
        return ChangeRec(
            when,
            self.revision(),
            author,
            title,
            message,
            original.files,
            pr,
            original.area,
            kind="backport",
            branch=branch,
        )

    def reland(self, when: float, culprit: ChangeRec) -> ChangeRec:
        pr = self._pr_for(when, opened_after=culprit.when)
        base = culprit.title.rsplit(" (#", 1)[0]
        title = f"{base} (reland) (#{pr})"
        message = f"{title}\n\nReland of #{culprit.pr_number} with the buildbot failure fixed."
        return ChangeRec(
            when,
            self.revision(),
            culprit.author,
            title,
            message,
            culprit.files,
            pr,
            culprit.area,
            kind="reland",
        )


def _issue_of(change: ChangeRec) -> int | None:
    title = change.title
    if title.startswith("[") and "] " in title:
        title = title.split("] ", 1)[1]  # a backport: "[3.13] gh-N: ..."
    if title.startswith("gh-"):
        return int(title[3:].split(":", 1)[0])
    return None


def _news_section(area: Area) -> str:
    return {"c": "Core_and_Builtins", "py": "Library", "build": "Build"}.get(area.lang, "Library")


def _news_name(rng: random.Random, when: float, issue: int) -> str:
    stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d-%H-%M-%S")
    nonce = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))
    return f"{stamp}.gh-issue-{issue}.{nonce}.rst"


_BODIES = (
    "This changes {noun} so that the common case no longer takes the slow path.",
    "The previous behaviour of {noun} was inconsistent with the documentation.",
    "Follow-up of gh-{issue}: handle the remaining corner cases in {noun}.",
    "Make {noun} thread-safe in the free-threaded build.",
    "Add tests for {noun} and fix the bug they found.",
    "{noun} could leak a reference on the error path.",
)
