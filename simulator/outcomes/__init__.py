"""What people did on GitHub about the changes a backtest proposed to revert.

``simulate --github owner/name`` asks GitHub, through PyGithub, what became
of each proposed revert and of each revert the history holds: the culprit's
pull request and labels, the revert pull request a person opened (when it
was opened and merged), or the pull request that fixed it forward.  The
modules, from the bottom up: ``pulls`` (a pull request as the lookups keep
it), ``client`` (the only module that imports PyGithub: retry and rate
limits, errors as one line), ``answers`` (every answer cached in the history
file, so a second run asks nothing), ``outcomes`` (matching revert pull
requests to culprits, lead times, precision and recall).
"""
