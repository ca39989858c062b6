"""The synthetic CPython-like fleet: a year of CPython-shaped builds, with ground truth.

Theory of operation
-------------------
1. **Fleet.**  CPython's builders, modelled from their names
   (:mod:`~simulator.synthetic.fleet`): the worker each shares with its
   siblings, its platform, how long a build takes, how flaky it is.
2. **Changes.**  Commit times on ``main`` with a daily, weekly and seasonal
   rhythm (:mod:`~simulator.synthetic.rhythm`); each gets an author, a
   title, files from its area (:mod:`~simulator.synthetic.areas`) and a PR
   number (:mod:`~simulator.synthetic.changes`).
3. **Breakages.**  A few percent of changes break one builder, a family of
   builders (Windows, s390x, refleak, NoGIL...) or many
   (:mod:`~simulator.synthetic.breakages`).  Each is fixed later by a revert
   or a fix-forward, after a delay drawn from real revert delays
   (docs/calibration.md); the fix is a new change inserted into the stream
   (:mod:`~simulator.synthetic.landings`).  A breakage is a half-open range
   of *revisions* ``[culprit, fix)``: a build is broken by it when its
   source stamp lies inside.
4. **Environment.**  Per worker (:mod:`~simulator.synthetic.worker_faults`):
   offline periods, infrastructure faults (git, full disk, silent hangs, a
   broken network that fails the same tests every time) and environment
   changes (an OS or toolchain update that makes some tests fail for days)
   are ranges of *time*.  Some builders are red at the start of the year,
   two stay red all year.  The tests that fail are
   :mod:`~simulator.synthetic.failing_tests`'.  **World changes**
   (:mod:`~simulator.synthetic.world`): a few times a year something
   outside the repository (a dependency release, a tzdata or libexpat
   update) fails one builder's tests from the build holding exactly one
   innocent change: a documentation-only change on a stable ``main``
   builder, an ordinary change on an unstable one, the first backport
   after weeks on a security branch.  **Maintenance windows** take a
   stable worker down for hours and leave its machine red for weeks, with
   forced builds (no change) when it is back and once it is fixed.
5. **Scheduling.**  Per worker, Buildbot's behaviour
   (:mod:`~simulator.synthetic.schedule`): each scheduler's
   ``treeStableTimer`` turns changes into build requests (30 s; one hour for
   refleak builders); a worker runs at most ``max_builds`` builds at once
   (usually one), shared by its builders on ``main`` and on the maintained
   branches.  A waiting builder's requests collapse into one
   (``collapseRequests``); a free slot goes to the builder with the oldest
   unclaimed request; nothing starts while the worker is offline.  The
   blamelist of a build is therefore a contiguous run of its branch's
   changes: those new since the builder's previous build.  The history
   starts with a warm-up month before the window (meta ``warmup_start``).
   Every stable machine also has a pull-request builder (``"<name> PR"``,
   tagged ``PullRequest``) on its worker, building pull requests labelled
   for the buildbots (:mod:`~simulator.synthetic.pull_requests`):
   ``refs/pull/N/merge``, no change, never collapsed; they hold the workers,
   so ``main``'s requests wait and collapse more.  Three stable ``main``
   builders' change data is scrubbed (no blamelists).
6. **Branches.**  Backports of ``main``'s changes land on the maintained
   branches (:mod:`~simulator.synthetic.branches`) as changes of their own
   (40-hex revision, ``[3.13] ... (GH-N) (#M)`` title, ``branch`` set); each
   machine has a builder per branch it builds (``"<name> 3.13"``, tagged
   ``3.13``; main's keep their name and are tagged ``3.x``), recorded like
   main's.  A backport of a change that broke ``main`` before ``main`` was
   fixed breaks the same builders on the branch (unless the branch differs
   there), and a backport may break a branch on its own; either is fixed on
   the branch by a revert or a (backported) fix-forward.
7. **Results.**  Each build's result follows from what is active at its
   revision and start time (:mod:`~simulator.synthetic.builds`, with the
   causes of :mod:`~simulator.synthetic.causes`), in this order: a build
   lost to the worker (EXCEPTION, RETRY, CANCELLED, SKIPPED), an
   infrastructure fault, the breakages/environment faults/always-red state
   active (the earliest one is the labelled cause; their failures all show
   in the log, a compile error hides the tests), a flaky test that failed
   its re-run too (almost always isolated), a flaky test that passed on
   re-run (WARNINGS), or SUCCESS.  Log tails come from
   :mod:`~simulator.synthetic.log_tails` and
   :mod:`~simulator.synthetic.regrtest_tails`.
8. **Writing.**  Everything goes into a temporary SQLite file beside the
   target through :class:`~simulator.history.store.HistoryStore`, which is
   renamed over the target only when complete
   (:mod:`~simulator.synthetic.writer`).

:mod:`~simulator.synthetic.generator` composes these parts
(:func:`~simulator.synthetic.generator.generate`) and keeps the shipped
history up to date
(:func:`~simulator.synthetic.generator.ensure_shipped_history`).  How the
result compares with the real fleet's published figures is measured by
:mod:`simulator.analysis.calibration` (history/README.md, Calibration).  Every
random choice comes from ``random.Random`` objects seeded from the seed
(one per builder for its builds' outcomes, one per worker for its queue,
one for the backports and their breakages); nothing reads the clock.
"""
