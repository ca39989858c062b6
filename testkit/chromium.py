"""A headless Chromium driven over the DevTools protocol, for tests that look at real pages.

Spoken to through a pipe (``--remote-debugging-pipe``: NUL-separated JSON on
file descriptors 3 and 4), which needs no websocket client and no port.
:meth:`Browser.open` loads a page and waits for its load event;
:meth:`Browser.problems` lists every console error or warning, uncaught
exception, log entry (CSP violations land there) and request the page made
to another address.  ``CHROMIUM`` is None where Debian's ``chromium`` is not
installed (tests skip then, except under CI).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Guards against a hung browser, not a speed assertion.
DEADLINE = 60.0


class Browser:
    """A headless Chromium spoken to over the DevTools pipe."""

    def __init__(self, profile: Path) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Park the child's ends above 3 and 4 so that dup2 cannot clobber them.
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 20)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 20)

        def wire() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "--window-size=1200,1600",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=wire,
        )
        for fd in (to_child_r, from_child_w, high_r, high_w):
            os.close(fd)
        self.wfd, self.rfd = to_child_w, from_child_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, AssertionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.wfd)
        os.close(self.rfd)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "Chromium did not answer in time"
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 1 << 16)
                assert chunk, "Chromium closed the DevTools pipe"
                self.buf += chunk
        message, _, self.buf = self.buf.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session is not None:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + DEADLINE
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply["error"]
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + DEADLINE
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open(self, url: str) -> str:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session)
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired")
        return session

    def problems(self, page_url: str) -> list[str]:
        """Console errors and warnings, exceptions, log errors, foreign requests."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning"):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(f"log: {params['entry'].get('text')}")
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if url != page_url and not url.startswith("data:"):
                    out.append(f"request: {url}")
        return out
