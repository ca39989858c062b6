"""A real Crossbar.io WAMP router on 127.0.0.1, for masters sharing a message queue.

Buildbot's multi-master setup passes events between masters through a WAMP
router (``c['mq'] = {'type': 'wamp', 'router_url': ..., 'realm': ...}``).
Crossbar.io pins many packages of its own, so it lives in a virtual
environment apart from the project's: ``.ci/run`` installs it there
(``pip install crossbar``) and names its executable in
:data:`CROSSBAR_ENV`; by hand, either set that variable or put ``crossbar``
on ``PATH``.

:func:`crossbar_router` writes a node configuration (one router worker, the
realm, an anonymous role allowed everything, a WebSocket transport bound
to 127.0.0.1 on a free port, reached at ``/ws``), starts
``crossbar start`` in its own process group, waits until the endpoint
answers, and stops the whole group when the block ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.processes import free_port, kill_process_group

CROSSBAR_ENV = "BUILDBOT_REVERT_CROSSBAR"
REALM = "realm1"
HOW_TO_GET_IT = (
    "Crossbar.io is not installed: python3 -m venv cb && cb/bin/pip install crossbar, "
    f"then {CROSSBAR_ENV}=$PWD/cb/bin/crossbar (or put crossbar on PATH); .ci/run does this"
)


def crossbar_executable() -> str | None:
    """The ``crossbar`` to run: :data:`CROSSBAR_ENV`'s, else the one on ``PATH``."""
    named = os.environ.get(CROSSBAR_ENV)
    if named:
        return named if Path(named).is_file() and os.access(named, os.X_OK) else None
    return shutil.which("crossbar")


@dataclass(frozen=True)
class Router:
    """A started router: what a master's ``c['mq']`` needs."""

    url: str
    realm: str
    log: Path

    def mq_config(self) -> str:
        """The ``master.cfg`` line that points a master's message queue here."""
        mq = {"type": "wamp", "router_url": self.url, "realm": self.realm}
        return f"c['mq'] = {mq!r}\n"


def node_config(port: int, realm: str = REALM) -> dict[str, object]:
    """A Crossbar node: one router, ``realm`` open to anonymous clients, WebSocket at /ws."""
    everything = {"call": True, "register": True, "publish": True, "subscribe": True}
    return {
        "version": 2,
        "controller": {},
        "workers": [
            {
                "type": "router",
                "realms": [
                    {
                        "name": realm,
                        "roles": [
                            {
                                "name": "anonymous",
                                "permissions": [
                                    {
                                        "uri": "",
                                        "match": "prefix",
                                        "allow": everything,
                                        "disclose": {"caller": False, "publisher": False},
                                        "cache": True,
                                    }
                                ],
                            }
                        ],
                    }
                ],
                # A plain WebSocket transport answers on any path, /ws included
                # (a "web" transport's websocket path fails autobahn's upgrade).
                "transports": [
                    {
                        "type": "websocket",
                        "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": port},
                    }
                ],
            }
        ],
    }


@contextlib.contextmanager
def crossbar_router(root: Path, timeout: float = 60.0) -> Iterator[Router]:
    """A running Crossbar router under ``root``; stopped (its whole group) on exit."""
    executable = crossbar_executable()
    if executable is None:
        raise RuntimeError(HOW_TO_GET_IT)
    cbdir = Path(root) / ".crossbar"
    cbdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (cbdir / "config.json").write_text(json.dumps(node_config(port), indent=2))
    log = Path(root) / "crossbar.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [executable, "start", "--cbdir", str(cbdir)],
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_serving(proc, f"http://127.0.0.1:{port}/ws", log, timeout)
        yield Router(f"ws://127.0.0.1:{port}/ws", REALM, log)
    finally:
        kill_process_group(proc)


def _wait_until_serving(
    proc: subprocess.Popen[bytes], probe: str, log: Path, timeout: float
) -> None:
    """Until the WebSocket path answers a plain GET (any status but 404)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"crossbar exited with status {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(probe, timeout=2):
                return
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"crossbar did not serve {probe} within {timeout:.0f} s; see {log}")
