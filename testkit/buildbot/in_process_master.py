"""A real Buildbot master in this process, fed builds through its data API.

The parity test and ``benchmarks/reporter.py`` need many finished builds in
a real master with the reporter loaded from its ``master.cfg``, faster than
a worker can run them.  :class:`InProcessMaster` starts a real
``BuildMaster`` (real database, real message queue, real REST API when asked)
and :meth:`InProcessMaster.finish_build` goes through the same data API
updates a running build does (:mod:`testkit.buildbot.data_updates`): a
change (with its sourcestamp), a buildset and build request, a build, its
steps and stdio logs, then ``finishBuild``, which sends the ``('builds', id,
'finished')`` event the reporter consumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from buildbot.master import BuildMaster
from twisted.internet import defer

from buildbot_revert.core.verification import PROPERTY, REASON_PREFIX
from testkit.buildbot import data_updates
from testkit.processes import create_master

MASTER_CFG = """\
from buildbot.plugins import reporters, schedulers, util, worker
c = BuildmasterConfig = {{}}
c['title'] = 'in-process'
c['buildbotURL'] = {url!r}
c['buildbotNetUsageData'] = None
c['db'] = {{'db_url': {db_url!r}}}
c['protocols'] = {{'pb': {{'port': 'tcp:0:interface=127.0.0.1'}}}}
c['workers'] = [worker.Worker('w', 'pass')]
c['schedulers'] = [schedulers.ForceScheduler(
    name='force', builderNames=[name for name, _ in {builders!r}])]
c['change_source'] = []
c['builders'] = [
    util.BuilderConfig(name=name, tags=tags, workernames=['w'],
                       factory=util.BuildFactory())
    for name, tags in {builders!r}
]
{www}
c['services'] = [reporters.RevertReporter({reporter})]
{extra_config}
"""


class InProcessMaster:
    """A started master in ``basedir`` with ``builders`` [(name, tags)]."""

    def __init__(
        self,
        basedir: Path,
        builders: Sequence[tuple[str, Sequence[str]]],
        *,
        reporter: str = "repo='python/cpython', mode='dry-run'",
        www_port: int | None = None,
        db_url: str = "sqlite:///state.sqlite",
        extra_config: str = "",
    ) -> None:
        self.basedir = Path(basedir)
        self.builders = [(name, list(tags)) for name, tags in builders]
        self.reporter_args = reporter
        self.www_port = www_port
        self.db_url = db_url
        # Appended to master.cfg (e.g. the dashboard, which needs www_port).
        self.extra_config = extra_config
        self.master: BuildMaster | None = None
        self._builder_ids: dict[str, int] = {}
        self._workerid: int | None = None
        self._last_change: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.www_port or 8010}/"

    def create(self) -> None:
        create_master(self.basedir, self.db_url)
        self._write_config()

    @defer.inlineCallbacks
    def reconfigure(
        self,
        builders: Sequence[tuple[str, Sequence[str]]] | None = None,
        reporter: str | None = None,
    ) -> Any:
        """Rewrite master.cfg with new builders' tags or reporter arguments, and reconfigure.

        What ``buildbot reconfig`` does to a running master (its SIGHUP):
        the builders first, then the services, the reporter among them only
        if its arguments changed.
        """
        assert self.master is not None
        if builders is not None:
            self.builders = [(name, list(tags)) for name, tags in builders]
        if reporter is not None:
            self.reporter_args = reporter
        self._write_config()
        yield self.master.doReconfig()

    def _write_config(self) -> None:
        www = (
            f"c['www'] = {{'port': 'tcp:{self.www_port}:interface=127.0.0.1', 'plugins': {{}}}}"
            if self.www_port
            else ""
        )
        (self.basedir / "master.cfg").write_text(
            MASTER_CFG.format(
                url=self.url,
                db_url=self.db_url,
                builders=self.builders,
                www=www,
                reporter=self.reporter_args,
                extra_config=self.extra_config,
            )
        )

    @defer.inlineCallbacks
    def start(self) -> Any:
        from twisted.internet import reactor

        self.master = BuildMaster(str(self.basedir), reactor=reactor)
        yield self.master.startService()
        if not self.master.running:
            raise RuntimeError(f"the master did not start; see the log of {self.basedir}")
        # The reporter restores or rebuilds its memory in the background.
        yield self.reporter.ready
        for name, _ in self.builders:
            self._builder_ids[name] = yield self.master.data.updates.findBuilderId(name)
        self._workerid = yield self.master.data.updates.findWorkerId("w")

    @defer.inlineCallbacks
    def stop(self) -> Any:
        if self.master is not None and self.master.running:
            yield self.master.stopService()

    @property
    def reporter(self) -> Any:
        assert self.master is not None
        return self.master.namedServices["services"].namedServices["RevertReporter"]

    def add_change(
        self,
        revision: str,
        author: str,
        comments: str,
        when: float,
        files: Sequence[str] = (),
        branch: str = "main",
    ) -> Any:
        """Add a change on ``branch`` (``refs/pull/N/merge``: a pull request's); return its
        sourcestamp id, whose builds build that branch."""
        assert self.master is not None
        return data_updates.add_change(self.master, revision, author, comments, when, files, branch)

    @defer.inlineCallbacks
    def finish_build(
        self,
        builder: str,
        results: int,
        ssid: int | None,
        steps: Sequence[tuple[str, int, str | None]] = (),
        worker: str | None = None,
        requested: str | None = None,
    ) -> Any:
        """Run one build of ``ssid`` through the data API; return its build id.

        ``steps`` are (name, results, stdio text or None for no log);
        ``worker`` names the worker that ran it (default: the one worker
        ``w``; another name is recorded as a worker of its own);
        ``requested`` marks it as a build buildbot-revert requested (the
        property and reason a verification or bisection build carries).
        """
        assert self.master is not None and self._workerid is not None
        if worker is None:
            workerid = self._workerid
        else:
            workerid = yield self.master.data.updates.findWorkerId(worker)
        buildid = yield data_updates.finish_build(
            self.master,
            self._builder_ids[builder],
            workerid,
            ssid,
            results,
            steps,
            properties={} if requested is None else {PROPERTY: (requested, "buildbot-revert")},
            reason="" if requested is None else REASON_PREFIX + requested,
        )
        return buildid

    @defer.inlineCallbacks
    def drain(self) -> Any:
        """Wait until the reporter has handled every build finished so far."""
        yield self.reporter._lock.run(lambda: None)
