"""Which builders propose reverts: one rule for the plugin and the simulator.

A builder is selected when its name matches the regular expression (when one
is given) and it carries every required tag.  The plugin's ``builders=`` and
``tags=`` settings and the simulator's ``--builders`` and ``--tags`` flags
both make a :class:`BuilderSelection`, so a backtest selects exactly the
builders the deployed reporter would watch.  The builders it leaves out are
still fed to the tracker: their failures are evidence for the guards.
Reading the settings or flags (and their error messages) is each shell's.

Builds of unmerged pull requests are another matter: they are not evidence
about the branch at all (they hold the PR's own revisions, not the merged
one), so the tracker ignores them whatever the selection
(:func:`is_pull_request_build`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.relevance import glob_matcher


@dataclass(frozen=True)
class BuilderSelection:
    """A builder name pattern and the tags a builder must all carry."""

    # Searched (not matched) in the builder's name; None selects every name.
    pattern: re.Pattern[str] | None = None
    tags: frozenset[str] = frozenset()
    # A builder carrying any of these tags is left out (e.g. ``PullRequest``).
    exclude_tags: frozenset[str] = frozenset()
    # When given, only these builder names (e.g. CPython's list of branch
    # builders), as well as the pattern.
    names: frozenset[str] | None = None

    def keeps(self, name: str, tags: Iterable[str]) -> bool:
        """Whether the builder named ``name``, carrying ``tags``, is selected."""
        if self.pattern is not None and not self.pattern.search(name):
            return False
        if self.names is not None and name not in self.names:
            return False
        carried = set(tags)
        return self.tags <= carried and not (self.exclude_tags & carried)


def is_pull_request_builder(builder_tags: Iterable[str], policy: Policy) -> bool:
    """Whether a builder builds pull requests only (it carries a ``pull_request_tags`` tag)."""
    return not policy.pull_request_tags.isdisjoint(builder_tags)


def is_pull_request_branch(branch: str, policy: Policy) -> bool:
    """Whether a sourcestamp's branch is a pull request's (``refs/pull/N/merge``)."""
    return glob_matcher(policy.pull_request_branches)(branch)


def is_pull_request_build(build: Build, builder_tags: Iterable[str], policy: Policy) -> bool:
    """Whether a build is of an unmerged pull request, not of a branch.

    So it is when its builder carries a ``pull_request_tags`` tag or its
    branch matches a ``pull_request_branches`` pattern.  The tracker ignores
    such builds entirely: they never open, extend or break a streak and are
    never evidence (a PR whose pre-merge builds failed is not "failing
    before" its own landing).
    """
    if is_pull_request_builder(builder_tags, policy):
        return True
    return build.branch is not None and is_pull_request_branch(build.branch, policy)
