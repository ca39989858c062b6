"""A real Buildbot master, worker and git repository for integration tests.

:class:`BuildbotHarness` builds, in a temporary directory, a bare git repository
("upstream") with a working clone that tests commit and push to; a Buildbot
4.x master (with ``buildbot-www``, so the REST API at ``/api/v2`` answers) whose
``GitPoller`` watches the bare repository; and a worker.  The master and worker
run as subprocesses bound to 127.0.0.1 on free ports, each in its own process
group so that :meth:`BuildbotHarness.close` can always kill them.

Every builder checks out the repository and runs its ``check.py``, which fails
(with regrtest-like output) when a tracked file holds a line ``BREAK`` or
``BREAK <builder> ...``.  A builder with ``sleep`` set is slow, so Buildbot's
default ``collapseRequests`` merges the requests queued behind it.

Other tests reuse it: ``extra_config`` is appended to ``master.cfg`` (e.g. to
add a reporter to ``c['services']``), ``db_url`` may point two masters at one
PostgreSQL database, ``env`` reaches the master process.  Use the
``buildbot_harness`` fixture (a factory) so that processes are cleaned up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from twisted.internet import threads

from buildbot_revert.plugin.ledger import Runner


class BuilderSpec(NamedTuple):
    """One builder of the harness master.

    ``sleep`` seconds are spent in the test step (a slow builder collapses
    requests); ``tree_stable_timer`` is the scheduler's (``None``: one buildset
    per change).
    """

    name: str
    tags: tuple[str, ...] = ()
    sleep: float = 0.0
    tree_stable_timer: float | None = None


DEFAULT_BUILDERS: tuple[BuilderSpec, ...] = (
    BuilderSpec("fast-linux", ("stable", "tier-1")),
    BuilderSpec("fast-macos", ("stable", "tier-2")),
    # Like CPython's refleak builders: slow, and a tree-stable timer that
    # groups changes arriving together into one build.
    BuilderSpec(
        "slow-refleaks", ("unstable", "tier-1", "refleak"), sleep=3.0, tree_stable_timer=2.0
    ),
)

DEFAULT_AUTHOR = "Ada Lovelace <ada@example.org>"

# The script every build runs from the checked-out tree.  It mimics the shape
# of CPython's regrtest output so failure-signature code sees something real.
CHECK_PY = '''\
"""Fails when a tracked file holds a BREAK marker for this builder."""
import os
import sys
import time

builder = sys.argv[1]
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
broken = []
for root, dirs, files in os.walk("."):
    dirs[:] = [d for d in dirs if d != ".git"]
    for name in sorted(files):
        if name == "check.py":
            continue
        path = os.path.join(root, name)
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                words = line.split()
                if words[:1] == ["BREAK"] and (len(words) == 1 or builder in words[1:]):
                    broken.append(os.path.splitext(name)[0])
tests = sorted({os.path.splitext(f)[0] for f in os.listdir(".") if f.endswith(".txt")})
for i, test in enumerate(tests or ["test_sanity"], 1):
    print(f"0:00:0{i % 10} load avg: 0.00 [{i}/{len(tests) or 1}] test_{test}")
if broken:
    for test in broken:
        print(f"test test_{test} failed -- Traceback (most recent call last):")
        print(f'  File "Lib/test/test_{test}.py", line 42, in test_it')
        print("AssertionError: marker found")
    print()
    print("== Tests result: FAILURE ==")
    print(f"{len(broken)} test{'s' if len(broken) > 1 else ''} failed:")
    print("    " + " ".join(f"test_{t}" for t in broken))
    sys.exit(1)
print("== Tests result: SUCCESS ==")
'''


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _venv_script(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found next to {sys.executable} or on PATH")
    return found


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return out.stdout.strip()


def _kill_group(proc: subprocess.Popen[bytes] | None, timeout: float = 15.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)


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
        self.master_dir = self.root / "master"
        self.worker_dir = self.root / f"worker-{worker_name}"
        self.clone = self.root / "clone"
        self.upstream = upstream or self.root / "upstream.git"
        self._owns_upstream = upstream is None
        # Another harness pushes to a shared upstream: rebase before committing.
        self.shared_upstream = upstream is not None
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

    @property
    def worker_log(self) -> Path:
        return self.worker_dir / "twistd.log"

    # -- the repository ---------------------------------------------------------

    def _init_repo(self) -> None:
        if self._owns_upstream and not self.upstream.exists():
            _git(self.root, "init", "-q", "--bare", "-b", "main", str(self.upstream))
        _git(self.root, "clone", "-q", str(self.upstream), str(self.clone))
        _git(self.clone, "config", "user.name", "Harness")
        _git(self.clone, "config", "user.email", "harness@example.org")
        if self._owns_upstream and not _git(self.clone, "branch", "-r"):
            _git(self.clone, "symbolic-ref", "HEAD", "refs/heads/main")
            self.commit({"check.py": CHECK_PY, "README.txt": "A project.\n"}, "Initial commit")

    def commit(
        self,
        files: dict[str, str | None],
        message: str,
        author: str = DEFAULT_AUTHOR,
        when: float | None = None,
        push: bool = True,
    ) -> str:
        """Write (or, for ``None``, delete) ``files``, commit, push; return the sha.

        With ``push=False`` the commit waits for the next :meth:`push`, so that
        several commits reach the poller at once.
        """
        if self.shared_upstream:
            _git(self.clone, "pull", "-q", "--rebase", "origin", "main")
        for rel, text in files.items():
            path = self.clone / rel
            if text is None:
                _git(self.clone, "rm", "-q", rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            _git(self.clone, "add", rel)
        name, _, email = author.partition(" <")
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
        if when is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{int(when)} +0000"
        _git(self.clone, "commit", "-q", "--allow-empty", "-m", message, env=env)
        if push:
            self.push()
        return _git(self.clone, "rev-parse", "HEAD")

    def push(self) -> None:
        _git(self.clone, "push", "-q", "origin", "HEAD:main")

    def revisions(self) -> list[str]:
        """All revisions on main, oldest first."""
        return _git(self.clone, "rev-list", "--reverse", "HEAD").split()

    # -- the master and worker --------------------------------------------------

    def master_cfg(self) -> str:
        builder_rows = [(b.name, list(b.tags), b.sleep, b.tree_stable_timer) for b in self.builders]
        return f"""\
# Generated by tests/buildbot_harness.py
import shlex

from buildbot.plugins import changes, schedulers, steps, util, worker

REPO = {str(self.upstream)!r}
BUILDERS = {builder_rows!r}
c = BuildmasterConfig = {{}}
c['title'] = 'harness'
c['titleURL'] = 'http://127.0.0.1/'
c['buildbotURL'] = {self.url!r}
c['buildbotNetUsageData'] = None
c['multiMaster'] = {self.multi_master!r}
c['db'] = {{'db_url': {self.db_url!r}}}
c['protocols'] = {{'pb': {{'port': 'tcp:{self.pb_port}:interface=127.0.0.1'}}}}
c['www'] = {{'port': 'tcp:{self.www_port}:interface=127.0.0.1', 'plugins': {{}}}}
c['workers'] = [worker.Worker({self.worker_name!r}, 'pass')]
c['change_source'] = []
if {self.poller!r}:
    c['change_source'].append(changes.GitPoller(
        repourl=REPO, branches=['main'], pollInterval={self.poll_interval!r},
        pollAtLaunch=True, workdir='gitpoller-work'))
CHECKOUT = (
    'set -e; test -d .git || git clone -q ' + shlex.quote(REPO) + ' .; '
    'git fetch -q origin; git checkout -q -f %(prop:revision:-origin/main)s; git rev-parse HEAD')

def got_revision(rc, stdout, stderr):
    return {{'got_revision': stdout.split()[-1]}} if rc == 0 and stdout.split() else {{}}

c['schedulers'] = []
c['builders'] = []
for name, tags, sleep, stable in BUILDERS:
    c['schedulers'].append(schedulers.SingleBranchScheduler(
        name='sched-' + name, change_filter=util.ChangeFilter(branch='main'),
        treeStableTimer=stable, builderNames=[name]))
    c['schedulers'].append(schedulers.ForceScheduler(
        name='force-' + name, builderNames=[name]))
    f = util.BuildFactory()
    # One shell command instead of the Git step's half-dozen keeps builds
    # fast on a loaded machine; it still sets got_revision from the checkout.
    f.addStep(steps.SetPropertyFromCommand(
        name='checkout', command=util.Interpolate(CHECKOUT), extract_fn=got_revision))
    f.addStep(steps.ShellCommand(
        name='test', command=['python3', 'check.py', name, str(sleep)]))
    c['builders'].append(util.BuilderConfig(
        name=name, tags=list(tags), workernames=[{self.worker_name!r}], factory=f))

{self.extra_config}
"""

    def create(self) -> None:
        """Make the repository, the master and the worker directories."""
        if self._created:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        self._init_repo()
        subprocess.run(
            [
                _venv_script("buildbot"),
                "create-master",
                "-q",
                "--db",
                self.db_url,
                str(self.master_dir),
            ],
            check=True,
            capture_output=True,
        )
        (self.master_dir / "master.cfg").write_text(self.master_cfg(), encoding="utf-8")
        subprocess.run(
            [
                _venv_script("buildbot-worker"),
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
                [_venv_script("buildbot"), "start", "--nodaemon", str(self.master_dir)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        if self.worker_proc is None or self.worker_proc.poll() is not None:
            self.worker_proc = subprocess.Popen(
                [_venv_script("buildbot-worker"), "start", "--nodaemon", str(self.worker_dir)],
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
        _kill_group(self.worker_proc)
        _kill_group(self.master_proc)
        self.worker_proc = self.master_proc = None

    def stop_master(self) -> None:
        """Stop only the master; the worker keeps trying to reconnect."""
        _kill_group(self.master_proc)
        self.master_proc = None

    close = stop

    # -- the REST API -------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        """GET ``/api/v2{path}``; ``None`` on 404.  Lists become repeated params."""
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.api_url}{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

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


POSTGRES = "postgresql://postgres@127.0.0.1:5432"


def create_postgres_database(prefix: str = "bbharness", *, required: bool = False) -> str:
    """Create an empty PostgreSQL database (trust auth) and return its URL.

    For two masters sharing one database; drop it with
    :func:`drop_postgres_database`.  Raises ``pytest.skip`` when no
    PostgreSQL answers on 127.0.0.1:5432, unless ``required`` (then the
    connection error fails the test: CI starts PostgreSQL for those).
    """
    import uuid

    psycopg2 = pytest.importorskip("psycopg2")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        conn = psycopg2.connect(f"{POSTGRES}/postgres", connect_timeout=5)
    except psycopg2.OperationalError as exc:
        if required:
            raise
        pytest.skip(f"no PostgreSQL on 127.0.0.1:5432 ({exc})")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    # SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3; we ship psycopg2.
    return f"{POSTGRES.replace('postgresql://', 'postgresql+psycopg2://')}/{name}"


def drop_postgres_database(url: str) -> None:
    import psycopg2

    name = url.rsplit("/", 1)[1]
    conn = psycopg2.connect(f"{POSTGRES}/postgres", connect_timeout=5)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


@contextlib.contextmanager
def postgres_database(prefix: str = "bbharness", *, required: bool = False) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (as :func:`create_postgres_database`), then dropped."""
    url = create_postgres_database(prefix, required=required)
    try:
        yield url
    finally:
        drop_postgres_database(url)


def engine_runner(engine: Any) -> Runner:
    """A ledger runner over a SQLAlchemy engine: ``fn(conn, ...)`` in a thread."""

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def thd() -> Any:
            with engine.connect() as conn:
                return fn(conn, *args, **kwargs)

        return threads.deferToThread(thd)

    return run


@pytest.fixture
def postgres_db_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for the test, dropped afterwards."""
    with postgres_database() as url:
        yield url


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


@pytest.fixture
def buildbot_harness(tmp_path: Path) -> Iterator[Callable[..., BuildbotHarness]]:
    """A factory of started harnesses under ``tmp_path`` (see :func:`harnesses`)."""
    with harnesses(tmp_path) as make:
        yield make
