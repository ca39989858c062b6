"""Buildbot's REST entities as small typed records: builders, builds, changes, steps, logs.

The records' fields keep Buildbot's names, so that a record's ``_asdict()``
is the entity shape :mod:`buildbot_revert.core.records` and
:mod:`buildbot_revert.core.blamelist` take (the plugin hands them
``master.data`` entities).  The ``*_FIELDS`` tuples are the fields
:class:`simulator.history.rest_client.BuildbotAPI` selects for each record
type, and the ``parse_*`` functions turn one JSON object into one record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from buildbot_revert.core.records import DELETED_LOG_TYPE, epoch


class BuilderInfo(NamedTuple):
    builderid: int
    name: str
    tags: tuple[str, ...]


class BuildInfo(NamedTuple):
    """One build as the builds collection lists it (times in epoch seconds)."""

    buildid: int
    builderid: int
    number: int
    buildrequestid: int | None
    workerid: int | None
    results: int | None
    started_at: float
    complete_at: float | None


class SourceStampInfo(NamedTuple):
    ssid: int
    revision: str | None
    branch: str | None
    repository: str
    codebase: str
    project: str


class ChangeInfo(NamedTuple):
    """One change; ``ssid`` is its sourcestamp's id (Buildbot nests the sourcestamp)."""

    changeid: int
    revision: str | None
    author: str
    comments: str
    when_timestamp: float
    files: tuple[str, ...]
    branch: str | None
    repository: str
    codebase: str
    project: str
    ssid: int | None


class StepInfo(NamedTuple):
    stepid: int
    number: int
    name: str
    results: int | None


class LogInfo(NamedTuple):
    """A step's log; ``type`` is Buildbot's: ``s`` stdio, ``t`` text, ``d`` deleted."""

    logid: int
    slug: str
    num_lines: int
    type: str

    @property
    def deleted(self) -> bool:
        return self.type == DELETED_LOG_TYPE


BUILDER_FIELDS = ("builderid", "name", "tags")
BUILD_FIELDS = (
    "buildid",
    "builderid",
    "number",
    "buildrequestid",
    "workerid",
    "results",
    "started_at",
    "complete_at",
    "complete",
)
CHANGE_FIELDS = (
    "changeid",
    "revision",
    "author",
    "comments",
    "when_timestamp",
    "files",
    "branch",
    "repository",
    "codebase",
    "project",
    "sourcestamp",
)
STEP_FIELDS = ("stepid", "number", "name", "results")
LOG_FIELDS = ("logid", "slug", "num_lines", "type")


def parse_builder(d: Mapping[str, Any]) -> BuilderInfo:
    return BuilderInfo(int(d["builderid"]), str(d["name"]), tuple(d.get("tags") or ()))


def parse_build(d: Mapping[str, Any]) -> BuildInfo:
    complete_at = d.get("complete_at")
    return BuildInfo(
        int(d["buildid"]),
        int(d["builderid"]),
        int(d["number"]),
        d.get("buildrequestid"),
        d.get("workerid"),
        d.get("results"),
        float(d["started_at"]),
        None if complete_at is None else float(complete_at),
    )


def parse_sourcestamp(d: Mapping[str, Any]) -> SourceStampInfo:
    return SourceStampInfo(
        int(d["ssid"]),
        d.get("revision"),
        d.get("branch"),
        d.get("repository") or "",
        d.get("codebase") or "",
        d.get("project") or "",
    )


def parse_change(d: Mapping[str, Any]) -> ChangeInfo:
    ss = d.get("sourcestamp") or {}
    return ChangeInfo(
        int(d["changeid"]),
        d.get("revision"),
        d.get("author") or "",
        d.get("comments") or "",
        epoch(d.get("when_timestamp")),
        tuple(d.get("files") or ()),
        d.get("branch"),
        d.get("repository") or "",
        d.get("codebase") or "",
        d.get("project") or "",
        ss.get("ssid"),
    )


def parse_step(d: Mapping[str, Any]) -> StepInfo:
    return StepInfo(int(d["stepid"]), int(d["number"]), str(d["name"]), d.get("results"))


def parse_log(d: Mapping[str, Any]) -> LogInfo:
    return LogInfo(
        int(d["logid"]), str(d["slug"]), int(d.get("num_lines") or 0), str(d.get("type") or "s")
    )
