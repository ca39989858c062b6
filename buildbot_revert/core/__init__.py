"""The decision core: the whole revert policy, pure, shared by both shells.

Theory of operation
===================

Two shells feed this package the same facts and carry out what it returns:
the Buildbot plugin (``buildbot_revert.plugin``) as builds finish on a live
master, and the simulator (``simulator``) from a year of recorded history.
Nothing here does I/O or reads a clock (time comes in with the data), so the
simulator's numbers are what the plugin, deployed, would have done.

The rule
--------
A revert of change C is proposed on builder B when B completes its N-th
consecutive FAILURE build (N = ``Policy.failures``, 3 by default), the last
non-neutral build before the first failing one was green (SUCCESS or
WARNINGS), the changes since that green build up to the first failing build
are exactly [C], and the failures are evidence that C broke B.  SKIPPED,
EXCEPTION, RETRY and CANCELLED builds neither extend nor break a streak.
Builds of unmerged pull requests (B tagged ``PullRequest``, or a
``refs/pull/*`` branch: ``Policy.pull_request_tags`` and
``pull_request_branches``) are no evidence about any branch: the tracker
leaves them out of every streak and memory of the branches, so a PR whose
own builds failed before it was merged does not look "failing before" its
landing.  They are evidence about their own pull request once it lands
(:mod:`.pullbuilds`): the suspect's PR's last build on each builder before
the merge that failed the same test cases is named in the verdict's
sentence and, after a long gap with no diff known, ties the change for
``stale-green`` when it followed a green build of its builder; one that
passed on the streak's machine is named and clears nothing.  They never
propose a revert alone (``Policy.pull_request_builds`` switches them off).

The order of checks
-------------------
:mod:`.tracker` runs them at the N-th failure (or when the streak ends
before it); the first that fails names the verdict's reason (:mod:`.verdicts`):

==========================  ===============================================
``always-red``              no green build was seen before the streak
``no-changes``              the first failing build holds no change
``multiple-changes``        it holds several: the policy does not guess
``culprit-is-revert``       never revert a revert
``culprit-too-old``         C landed longer ago than ``max_culprit_age``
``not-watched``             B is evidence only: outside the selection
``infra``                   a failure is the infrastructure's (checkout,
                            lost worker, full disk)
``generic-failure``         the failures name nothing (exit codes only)
``inconsistent-failure``    the failing builds do not share a failure
``change-cannot-explain``   C touched only documentation, and the failure
                            is not a docs build's
``failing-before``          the same tests failed without C (14 days)
``stale-green``             B was last green over 7 days before, and C is
                            not tied to the failure (it touched no failing
                            test, nor the code one is named after, and its
                            own PR's builds did not fail them)
``configuration-specific``  every builder failing from C was last green
                            over 7 days before, and builders running the
                            same tests built C and passed
``environment-test``        only tests of what the worker provides fail,
                            and C touched none of their code
``flaky-builder``           B fails alone and recovers too often
``flaky-case``              every failing test case is a known flake
``already-proposed``        C was proposed from another builder: B joins
``tolerated-builder``       B is allowed to fail (``unstable``): it never
                            proposes alone
``revert``                  every check holds: propose the revert
==========================  ===============================================

and a streak that never reached N failures ends as ``too-short`` (it went
green) or ``unfinished`` (the history ended).  Every red streak gets exactly
one verdict, with a machine-readable reason and a sentence that explains it.
This table gives the order; what every reason means, the verdicts of
intersection, bisection and verification included, is written once, in
:data:`.verdicts.MEANINGS`, from which the documentation's table is made.
The evidence guards (``infra`` .. ``flaky-case``, :mod:`.guards`) read
failure signatures off the failing steps' log tails (:mod:`.signatures`)
and, for relevance and stale green, the paths C touched (:mod:`.relevance`);
each can be switched off in :class:`.policy.Policy`.  Corroboration (builders
on several workers failing the same way from C) lifts only the two that
doubt (``failing-before``, ``flaky-builder``).  The builder's tags (given by
the shell when it first sees the builder, and again by
``StreakTracker.retag`` after a reconfiguration; a streak reads those current
at its decision) say which builders build pull requests, are tolerated, or
build the docs.

After the verdict
-----------------
A ``revert`` verdict carries a :class:`.verdicts.RevertRequest`.  What the
plugin then does on GitHub (record, comment, wait for the grace period, file,
adopt an existing revert, stand down) is decided by :mod:`.actions` from the
facts the shell fetched; :mod:`.grace` states the grace rule once, for both
shells: from when each builder qualified (``revert`` and ``already-proposed``
verdicts) and when its streak ended, as :func:`.grace.fact` reads them off
the tracker's events, it files at the earliest deadline a builder is still
red at and stands down when every builder recovered by its own;
:mod:`.pr_text` writes the pull request and comments, escaping every
untrusted string (:mod:`.markdown`).  Once the revert PR is open,
:mod:`.outcomes` says how it ends: merged, closed by a human, or stood down
when every qualified builder went green without it (never closing what a
human touched unless configured), and how its own builds read;
:mod:`.follow_up_text` writes what the plugin then posts.

Memory
------
What the tracker knows (each builder's streak and last green build, which
tests failed where, isolated failures, landings) is its whole state, and it
can be saved and restored (``StreakTracker.__getstate__``/``attach``): the
plugin keeps it in the master's database across restarts.  Both shells feed
it ``Policy.memory_horizon`` of history before it decides anything: the
simulator before ``--since``, the plugin when it has no saved state.

The modules
-----------
:mod:`.model` (builds, changes, results), :mod:`.policy` (the policy's
settings), :mod:`.defaults` (the reporter's other defaults, read by both
shells), :mod:`.selection` (which builders propose, for both shells),
:mod:`.blamelist` and :mod:`.records` (turning Buildbot's entities into the
model, shared by the plugin's gatherer and the simulator's importer),
:mod:`.references` (how commits and PRs name each other: PR numbers, logins,
reverts, our marker), :mod:`.pullbuilds` (the suspect's own pull-request
builds), :mod:`.signatures` (a package: one parser per log
format), :mod:`.relevance` (documentation-only changes, path patterns, and
which tests a change's files touch), :mod:`.testids`, :mod:`.diffs` and
:mod:`.caselink` (the link between a change's hunks and the failing test
cases; :mod:`.diff_wants` names the diffs a decision will read, for a shell
that must fetch them first), :mod:`.guards`, :mod:`.tracker`,
:mod:`.verdicts`, :mod:`.grace`, :mod:`.actions`, :mod:`.outcomes`,
:mod:`.pr_text`, :mod:`.follow_up_text`, :mod:`.markdown`; beyond one change
in the first failing build, :mod:`.intersection` (the one change other
builders' first failing builds share: ``revert-by-intersection``),
:mod:`.verification` (what a build of the suspect's parent proves:
``environment``, ``unverified``) and :mod:`.bisection` (which revision to
build next, and the culprit found: ``revert-by-bisection``, judged by
``StreakTracker.judge_found``); past the verdict, :mod:`.post_verdict` (the
machine that decides which builds to request, what to conclude and when the
daily cap turns a revert into a comment; its events and commands in
:mod:`.machine_io`, requested builds named by :mod:`.requests`): the plugin
carries its commands out on the master, the simulator from its truth model.
"""
