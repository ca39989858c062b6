"""The builds buildbot-revert requests, named by a typed key, and where they start.

A verification or bisection build is requested to answer one question
about one red streak: does revision R, built now on builder B, fail the
way the streak does?  :class:`RequestKey` names such a build by exactly
those facts (builder, the streak's first failing build, revision, role),
so that the shell that requests it and the shell that reads it back agree
without parsing a sentence.  The key travels with the build as the value of
the buildset property :data:`~.verification.PROPERTY` (:meth:`RequestKey.encode`)
and comes back in :attr:`.model.Build.verification`;
:meth:`RequestKey.describe` is the sentence for logs and the buildset's
reason.

:class:`GreenRevisions` remembers what each builder last built green:
the parent of a later streak's change, where a verification or bisection
starts.  Both shells feed it every ordinary build, in completion order.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from buildbot_revert.core.model import Build, Change, Result

_GREEN = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})


class Role(StrEnum):
    """Why a build is requested."""

    PARENT = "parent"  # verification: the suspect's parent must pass
    SUSPECT = "suspect"  # verification: the suspect itself must fail alike
    BISECTION_PARENT = "bisection-parent"  # bisection: the range's green end, again
    PROBE = "probe"  # bisection: a revision inside the range


@dataclass(frozen=True, order=True)
class RequestKey:
    """One requested build: ``revision`` on ``builder``, for the streak from ``streak``."""

    builder: str
    streak: int
    revision: str
    role: Role

    def encode(self) -> str:
        """The key as the text a build property carries (JSON: builder names hold anything)."""
        return json.dumps(
            {
                "builder": self.builder,
                "streak": self.streak,
                "revision": self.revision,
                "role": self.role.value,
            },
            sort_keys=True,
        )

    @classmethod
    def decode(cls, text: str | None) -> RequestKey | None:
        """The key a property's text holds; None for text no key wrote (an older mark)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(
                builder=str(data["builder"]),
                streak=int(data["streak"]),
                revision=str(data["revision"]),
                role=Role(data["role"]),
            )
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        """The sentence for logs and the buildset's reason."""
        what = {
            Role.PARENT: "verification build of the parent",
            Role.SUSPECT: "verification build of the suspect",
            Role.BISECTION_PARENT: "bisection build of the parent",
            Role.PROBE: "bisection build (probe)",
        }[self.role]
        return (
            f"{what} {self.revision[:12]} on {self.builder}, "
            f"for the red streak from build {self.streak}"
        )


@dataclass
class GreenRevisions:
    """Each builder's newest revision built, and the one it last built green."""

    built: dict[str, str] = field(default_factory=dict)
    green: dict[str, str] = field(default_factory=dict)

    def remember(self, build: Build) -> None:
        """Note what an ordinary build built (the parent of a later streak's change)."""
        if build.changes:
            self.built[build.builder] = max(build.changes, key=lambda c: c.when).revision
        if build.result in _GREEN and build.builder in self.built:
            self.green[build.builder] = self.built[build.builder]

    def green_of(self, builder: str) -> str | None:
        """The revision ``builder`` last built green, if it ever did."""
        return self.green.get(builder)


def parent_in(suspects: Sequence[Change], revision: str, green: str | None) -> str | None:
    """The revision before ``revision`` among the streak's suspects (the green one first)."""
    ordered = sorted(suspects, key=lambda c: c.when)
    for i, change in enumerate(ordered):
        if change.revision == revision:
            return ordered[i - 1].revision if i else green
    return None
