"""A real Buildbot master, worker and git repository for integration tests.

:class:`BuildbotHarness` builds, in a temporary directory, a bare git repository
("upstream") with a working clone that tests commit and push to
(:mod:`testkit.buildbot.git_repository`); a Buildbot 4.x master (with
``buildbot-www``, so the REST API at ``/api/v2`` answers) whose ``GitPoller``
watches the bare repository, configured as :mod:`testkit.buildbot.master_config`
says; and a worker.  The master and worker run as subprocesses bound to
127.0.0.1 on free ports, each in its own process group so that
:meth:`BuildbotHarness.close` can always kill them.

Other tests reuse it: ``extra_config`` is appended to ``master.cfg`` (e.g. to
add a reporter to ``c['services']``), ``db_url`` may point two masters at one
PostgreSQL database (:func:`testkit.databases.postgres_database`), ``env``
reaches the master process.  A push makes the master poll at once, as a
push webhook would (``poll_on_push=False``: only at its ``poll_interval``,
for a story whose shape depends on that timing).  Use :func:`harnesses` (in
a fixture) so that processes are cleaned up.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from testkit.buildbot.git_repository import DEFAULT_AUTHOR, GitRepository
from testkit.buildbot.master_config import CHECK_PY, DEFAULT_BUILDERS, BuilderSpec, master_cfg
from testkit.processes import create_master, free_port, kill_process_group, venv_script

# How often a GET whose answer was cut short is asked (see BuildbotHarness.get).
_GET_ATTEMPTS = 3


class BuildbotHarness:
    """A git repository, a Buildbot master and a worker, in ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        builders: tuple[BuilderSpec, ...] | list[BuilderSpec] = DEFAULT_BUILDERS,
        extra_config: str = "",
        db_url: str | None = None,
        env: dict[str, str] | None = None,
        poll_interval: float = 1.0,
        upstream: Path | None = None,
        worker_name: str = "worker",
        multi_master: bool = False,
        poller: bool = True,
        poll_on_push: bool = True,
    ) -> None:
        self.root = Path(root)
        self.builders = tuple(builders)
        self.extra_config = extra_config
        self.db_url = db_url or "sqlite:///state.sqlite"
        self.env = dict(env or {})
        self.poll_interval = poll_interval
        self.worker_name = worker_name
        self.multi_master = multi_master
        self.poller = poller
        self.poll_on_push = poll_on_push
        self.master_dir = self.root / "master"
        self.worker_dir = self.root / f"worker-{worker_name}"
        # Given an upstream, the repository is another harness's, shared.
        self.repository = GitRepository(
            upstream or self.root / "upstream.git", self.root / "clone", shared=upstream is not None
        )
        self.www_port = free_port()
        self.pb_port = free_port()
        self.master_proc: subprocess.Popen[bytes] | None = None
        self.worker_proc: subprocess.Popen[bytes] | None = None
        self._created = False

    # -- addresses ------------------------------------------------------------

    @property
    def url(self) -> str:
        """The master's base URL (``buildbotURL``)."""
        return f"http://127.0.0.1:{self.www_port}/"

    @property
    def api_url(self) -> str:
        return f"{self.url}api/v2"

    @property
    def master_log(self) -> Path:
        return self.master_dir / "twistd.log"

    # -- the repository ---------------------------------------------------------

    @property
    def upstream(self) -> Path:
        return self.repository.upstream

    @property
    def clone(self) -> Path:
        return self.repository.clone

    def commit(
        self,
        files: dict[str, str | None],
        message: str,
        author: str = DEFAULT_AUTHOR,
        when: float | None = None,
        push: bool = True,
    ) -> str:
        """Commit ``files`` to the repository (see :meth:`GitRepository.commit`); the sha."""
        sha = self.repository.commit(files, message, author, when, push)
        if push and self.poll_on_push:
            self.poll_now()
        return sha

    def push(self) -> None:
        """Push the clone's commits (and have the master poll for them now)."""
        self.repository.push()
        if self.poll_on_push:
            self.poll_now()

    def poll_now(self) -> None:
        """Have the master's ``GitPoller`` poll now, as a push webhook makes it do.

        Without it a push waits for the next poll (up to ``poll_interval``),
        which on a story of many pushes adds up.  A master that is not running
        (or not answering) is left alone: its poller finds the push later.
        """
        if not self.poller or self.master_proc is None or self.master_proc.poll() is not None:
            return
        request = urllib.request.Request(f"{self.url}change_hook/poller", data=b"")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(request, timeout=10) as resp:
                resp.read()

    def build_pull_request(self, number: int, revert: str) -> str:
        """Make GitHub's ``refs/pull/<number>/merge`` (the revert of ``revert`` on main) and
        announce it to the master through the ``base`` change hook, as GitHub's webhook
        does for a labelled PR on CPython's master; its pull-request builders build it.
        Returns the merge ref's sha."""
        sha = self.repository.push_pull_request(number, revert)
        form = urllib.parse.urlencode(
            {
                "revision": sha,
                "branch": f"refs/pull/{number}/merge",
                "repository": str(self.upstream),
                "project": "",
                "comments": f"Pull request #{number}",
                "author": "GitHub <noreply@github.com>",
            }
        ).encode()
        request = urllib.request.Request(f"{self.url}change_hook/base", data=form)
        with urllib.request.urlopen(request, timeout=30) as resp:
            resp.read()
        return sha

    def revisions(self) -> list[str]:
        """All revisions on main, oldest first."""
        return self.repository.revisions()

    # -- the master and worker --------------------------------------------------

    def create(self) -> None:
        """Make the repository, the master and the worker directories."""
        if self._created:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        self.repository.create({"check.py": CHECK_PY, "README.txt": "A project.\n"})
        create_master(self.master_dir, self.db_url)
        config = master_cfg(
            upstream=self.upstream,
            builders=self.builders,
            url=self.url,
            multi_master=self.multi_master,
            db_url=self.db_url,
            pb_port=self.pb_port,
            www_port=self.www_port,
            worker_name=self.worker_name,
            poller=self.poller,
            poll_interval=self.poll_interval,
            extra_config=self.extra_config,
        )
        (self.master_dir / "master.cfg").write_text(config, encoding="utf-8")
        subprocess.run(
            [
                venv_script("buildbot-worker"),
                "create-worker",
                "-q",
                str(self.worker_dir),
                f"127.0.0.1:{self.pb_port}",
                self.worker_name,
                "pass",
            ],
            check=True,
            capture_output=True,
        )
        self._created = True

    def start(self, timeout: float = 60.0) -> None:
        """Start (or restart) the master and the worker; wait until both are ready."""
        self.create()
        log_offset = self.master_log.stat().st_size if self.master_log.exists() else 0
        if self.master_proc is None or self.master_proc.poll() is not None:
            self.master_proc = subprocess.Popen(
                [venv_script("buildbot"), "start", "--nodaemon", str(self.master_dir)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        if self.worker_proc is None or self.worker_proc.poll() is not None:
            self.worker_proc = subprocess.Popen(
                [venv_script("buildbot-worker"), "start", "--nodaemon", str(self.worker_dir)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        self._wait(deadline, "the REST API", lambda: self.get("") is not None)
        self._wait(deadline, "the worker", self._worker_connected)
        if self.poller:
            # The GitPoller's first poll only records the branch head; commits
            # pushed before it completes would silently become that baseline.
            # A second poll, asked for now, says the first one is over.
            self.poll_now()
            self._wait(deadline, "the GitPoller", lambda: self._polls_since(log_offset) >= 2)

    def _polls_since(self, offset: int) -> int:
        if not self.master_log.exists():
            return 0
        with self.master_log.open("rb") as fh:
            fh.seek(offset)
            return fh.read().count(b"gitpoller: processing changes from")

    def _worker_connected(self) -> bool:
        body = self.get("/workers", name=self.worker_name)
        return bool(body and body["workers"] and body["workers"][0]["connected_to"])

    def _wait(self, deadline: float, what: str, ready: Callable[[], bool]) -> None:
        while time.monotonic() < deadline:
            if self.master_proc is not None and self.master_proc.poll() is not None:
                raise RuntimeError(f"the master exited; see {self.master_log}\n{self.log_tail()}")
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"timed out waiting for {what}; see {self.master_log}")

    def log_tail(self, lines: int = 40) -> str:
        if not self.master_log.exists():
            return ""
        return "\n".join(self.master_log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the master (gracefully if it will) and the worker."""
        kill_process_group(self.worker_proc)
        kill_process_group(self.master_proc)
        self.worker_proc = self.master_proc = None

    def stop_master(self) -> None:
        """Stop only the master; the worker keeps trying to reconnect."""
        kill_process_group(self.master_proc)
        self.master_proc = None

    close = stop

    # -- the REST API -------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        """GET ``/api/v2{path}``; ``None`` on 404.  Lists become repeated params.

        A GET is asked again when its answer arrives cut short: on a loaded
        machine Buildbot's web server now and then closes a connection
        before the body it announced (``IncompleteRead``), which says
        nothing about the master's state that a test observes.
        """
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.api_url}{path}" + (f"?{query}" if query else "")
        for attempt in range(_GET_ATTEMPTS):
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return None
                raise
            except (http.client.IncompleteRead, ConnectionResetError):
                if attempt == _GET_ATTEMPTS - 1:
                    raise
                time.sleep(0.2)
        raise AssertionError("unreachable")

    def control(self, path: str, method: str, **params: Any) -> Any:
        """POST a data API control (JSON-RPC) to ``/api/v2{path}``, e.g. a worker's ``pause``."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        request = urllib.request.Request(
            f"{self.api_url}{path}",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    def pause_worker(self, name: str, paused: bool = True) -> None:
        """Pause (or unpause) worker ``name``, wherever it is connected; wait until it is."""
        [worker] = self.get("/workers", name=name)["workers"]
        self.control(f"/workers/{worker['workerid']}", "pause" if paused else "unpause")
        deadline = time.monotonic() + 30.0
        self._wait(
            deadline,
            f"worker {name} to be {'paused' if paused else 'unpaused'}",
            lambda: self.get("/workers", name=name)["workers"][0]["paused"] == paused,
        )

    def builder_ids(self) -> dict[str, int]:
        return {b["name"]: b["builderid"] for b in self.get("/builders")["builders"]}

    def finished_builds(self) -> list[dict[str, Any]]:
        """All complete builds, with ``builder`` (name) and ``got_revision`` added."""
        names = {v: k for k, v in self.builder_ids().items()}
        builds = self.get("/builds", complete="true", property="got_revision", order="buildid")
        out = []
        for b in builds["builds"]:
            props = b.get("properties") or {}
            b["builder"] = names.get(b["builderid"])
            b["got_revision"] = props.get("got_revision", [None])[0]
            out.append(b)
        return out

    def wait_for_builds(
        self,
        predicate: Callable[[list[dict[str, Any]]], bool],
        timeout: float = 60.0,
    ) -> list[dict[str, Any]]:
        """Poll the finished builds until ``predicate(builds)``; return them."""
        deadline = time.monotonic() + timeout
        while True:
            builds = self.finished_builds()
            if predicate(builds):
                return builds
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"builds never satisfied the predicate; have "
                    f"{[(b['builder'], b['number'], b['results']) for b in builds]}"
                )
            if self.master_proc is None or self.master_proc.poll() is not None:
                raise RuntimeError(f"the master is not running\n{self.log_tail()}")
            time.sleep(0.3)

    def wait_for_revision(
        self, sha: str, builders: list[str] | None = None, timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        """Wait until each of ``builders`` (default: all) finished a build of ``sha``."""
        wanted = set(builders if builders is not None else [b.name for b in self.builders])

        def done(builds: list[dict[str, Any]]) -> bool:
            return wanted <= {b["builder"] for b in builds if b["got_revision"] == sha}

        return self.wait_for_builds(done, timeout)


@contextlib.contextmanager
def harnesses(root: Path) -> Iterator[Callable[..., BuildbotHarness]]:
    """A factory of started harnesses under ``root``, all stopped on exit.

    Keyword arguments as :class:`BuildbotHarness`; ``start=False`` leaves
    one to the caller to start.  Stopped whatever happens.
    """
    made: list[BuildbotHarness] = []

    def make(name: str = "bb", *, start: bool = True, **kwargs: Any) -> BuildbotHarness:
        harness = BuildbotHarness(root / name, **kwargs)
        made.append(harness)
        if start:
            harness.start()
        return harness

    try:
        yield make
    finally:
        for harness in reversed(made):
            harness.close()
