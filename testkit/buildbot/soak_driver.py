"""A service inside a master process that writes finished builds when told to, over HTTP.

``benchmarks/soak.py`` drives thousands of builds through two real master
processes.  Real workers would take hours, so each master loads this
service (``c['services']``) and the soak tells it, on 127.0.0.1, which
change to add and which build to run; the service goes through the master's
own data API (:mod:`testkit.buildbot.data_updates`), so the build is in the
shared database and its ``finished`` event goes out through the master's
message queue exactly as a real build's would.

``POST /change``  ``{"revision", "author", "comments", "when", "files"}`` → ``{"ssid"}``
``POST /build``   ``{"builder", "worker", "ssid", "results", "steps"}`` → ``{"buildid"}``
``GET /status``   ``{"idle", "masterid"}``: ``idle`` when the reporter has
handled every build it was given (its build lock free, nobody waiting).
``GET /objects``  ``{type name: count}`` of the objects the garbage
collector tracks, for the soak to tell which kinds grow with the builds.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from typing import Any

from buildbot.util import service
from twisted.internet import defer, endpoints
from twisted.python import log
from twisted.web import resource, server

from testkit.buildbot import data_updates

REPORTER = "RevertReporter"


class SoakDriver(service.BuildbotService):
    """Listens on 127.0.0.1:``port`` for the soak's orders."""

    name = "soak-driver"

    def checkConfig(self, port: int) -> None:
        if not isinstance(port, int) or port <= 0:
            from buildbot import config as bb_config

            bb_config.error("SoakDriver: port must be a positive integer")

    def reconfigService(self, port: int) -> Any:
        self.port = port
        return defer.succeed(None)

    @defer.inlineCallbacks
    def startService(self) -> Any:
        yield super().startService()
        self._builders: dict[str, int] = {}
        self._workers: dict[str, int] = {}
        endpoint = endpoints.TCP4ServerEndpoint(
            self.master.reactor, self.port, interface="127.0.0.1"
        )
        self._listening = yield endpoint.listen(server.Site(_Orders(self)))

    @defer.inlineCallbacks
    def stopService(self) -> Any:
        listening = getattr(self, "_listening", None)
        if listening is not None:
            yield listening.stopListening()
        yield super().stopService()

    # -- the orders ----------------------------------------------------------------

    @defer.inlineCallbacks
    def change(self, order: dict[str, Any]) -> Any:
        ssid = yield data_updates.add_change(
            self.master,
            order["revision"],
            order["author"],
            order["comments"],
            float(order["when"]),
            order.get("files") or (),
        )
        return {"ssid": ssid}

    @defer.inlineCallbacks
    def build(self, order: dict[str, Any]) -> Any:
        updates = self.master.data.updates
        name, worker = order["builder"], order["worker"]
        if name not in self._builders:
            self._builders[name] = yield updates.findBuilderId(name)
        if worker not in self._workers:
            self._workers[worker] = yield updates.findWorkerId(worker)
        steps = [(s[0], int(s[1]), s[2]) for s in order.get("steps") or ()]
        buildid = yield data_updates.finish_build(
            self.master,
            self._builders[name],
            self._workers[worker],
            order.get("ssid"),
            int(order["results"]),
            steps,
            complete_request=True,
        )
        return {"buildid": buildid}

    def status(self) -> dict[str, Any]:
        reporter = self.master.namedServices["services"].namedServices.get(REPORTER)
        lock = getattr(reporter, "_lock", None)
        idle = lock is not None and not lock.locked and not lock.waiting
        return {"idle": bool(idle), "masterid": self.master.masterid}

    def objects(self) -> dict[str, int]:
        counts = Counter(type(o).__qualname__ for o in gc.get_objects())
        return dict(counts.most_common(200))


class _Orders(resource.Resource):
    isLeaf = True

    def __init__(self, driver: SoakDriver) -> None:
        super().__init__()
        self.driver = driver

    def render_GET(self, request: Any) -> bytes:
        answers = {b"/status": self.driver.status, b"/objects": self.driver.objects}
        answer = answers.get(request.path)
        if answer is None:
            request.setResponseCode(404)
            return b"{}"
        return json.dumps(answer()).encode()

    def render_POST(self, request: Any) -> Any:
        handlers = {b"/change": self.driver.change, b"/build": self.driver.build}
        handler = handlers.get(request.path)
        if handler is None:
            request.setResponseCode(404)
            return b"{}"
        order = json.loads(request.content.read())
        d = defer.maybeDeferred(handler, order)

        def answer(result: Any) -> None:
            request.setHeader(b"content-type", b"application/json")
            request.write(json.dumps(result).encode())
            request.finish()

        def failed(failure: Any) -> None:
            log.err(failure, "soak driver: order failed")
            request.setResponseCode(500)
            request.write(json.dumps({"error": str(failure.value)}).encode())
            request.finish()

        d.addCallbacks(answer, failed)
        return server.NOT_DONE_YET
