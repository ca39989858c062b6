"""The GitHub adapter: the only code that talks to GitHub, for the plugin.

Three parts and a face:

* :mod:`.transport`: async HTTP through treq, with the rules GitHub asks
  integrators to follow (retries, rate limits, serialised writes, timeouts,
  look-before-create after an uncertain write, the token kept out of every
  message);
* :mod:`.responses`: GitHub's JSON read into records (:class:`PullRequest`,
  :class:`IssueComment`);
* :mod:`.strategies`: finding and filing revert PRs (native GraphQL revert,
  the REST git-data fallback, else a manual revert the plugin comments about);
* :mod:`.client`: :class:`GitHubClient`, the facade the plugin holds.

The plugin imports what it needs from here.
"""

from buildbot_revert.core.references import revert_marker
from buildbot_revert.github.client import GitHubClient
from buildbot_revert.github.responses import IssueComment, PullRequest
from buildbot_revert.github.strategies import (
    ManualRevertNeeded,
    RevertOutcome,
    revert_branch,
)
from buildbot_revert.github.transport import GitHubError

__all__ = [
    "GitHubClient",
    "GitHubError",
    "IssueComment",
    "ManualRevertNeeded",
    "PullRequest",
    "RevertOutcome",
    "revert_branch",
    "revert_marker",
]
