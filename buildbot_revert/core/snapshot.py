"""The format of the core's saved state: the tracker's memory and held records.

What a shell keeps across restarts, as data (:mod:`.codec`): every class
the format may hold is listed here with its fields and their types, and
nothing else can be decoded.  A saved document carries :data:`FORMAT` and
the digest of the classes' fields (:data:`SCHEMA`); a document of another
format is never decoded as this one (:class:`FormatChanged`), and a
document that does not decode raises :class:`~.codec.FormatError`.  The
digest is of names and types only: a release that changes the core's code
or comments but not these fields reads the snapshots of the last.

The tracker's memory depends on the policy it was built under too; a shell
keys its snapshot on :func:`policy_digest` beside the format.

Format 2 added the post-verdict machine's requested builds that ended
cancelled once and were requested again (``MachineState.requested_again``);
nothing else changed.  Format 3 added, to each flaky test case's record,
where it first flaked and the builds seen there since
(``CaseFlake.since``: its runs seen, for the flaky guards' odds).
Documents of formats 1 and 2 (their schemas as those releases wrote them,
:data:`SCHEMA_1`, :data:`SCHEMA_2`) are still read, by the classes as they
were then: a held machine's state comes back with the set format 1 lacked
empty, a flaky case's record without its runs seen (its rate unknown: the
guard declines it as before, :mod:`.flake_odds`).

Every import of the classes the format holds is in the block below, so
that a class that moves between the core's modules is re-pointed here only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from array import array
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from buildbot_revert.core.bisection import Bisection
from buildbot_revert.core.codec import Codec, FormatError, Schema
from buildbot_revert.core.flaky_cases import CaseFlake, FlakyCases
from buildbot_revert.core.intersection import Blamelist
from buildbot_revert.core.memory import FailureMemory, FailureRun, FlakeMemory, Landings
from buildbot_revert.core.model import Build, Change, FailedStep
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.post_verdict import Bisecting, MachineState, Verifying
from buildbot_revert.core.pullbuilds import PullBuild, PullRequestBuilds
from buildbot_revert.core.requests import GreenRevisions, RequestKey
from buildbot_revert.core.signatures import Signature
from buildbot_revert.core.streaks import BuilderState, OpenStreak
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import (
    BuildRef,
    PullRequestEvidence,
    RankedSuspect,
    RevertRequest,
    Streak,
    Verdict,
)

# The version of the documents written here.  Raise it (and add a
# migration to MIGRATIONS, or let old documents be rebuilt) when a change
# of the fields below is one the schema digest alone should not decide.
FORMAT = 3

# Written migrations: a format -> the function making a document of that
# format one of the next (its "format" and "schema" included).  None yet:
# format 1 is read as it is (see the module and ``_READERS``).
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class FormatChanged(FormatError):
    """A document of another format version or schema: rebuilt, or migrated."""


def _named(cls: type, name: str) -> Schema:
    """An immutable NamedTuple, its fields and types as it declares them."""
    hints = typing.get_type_hints(cls)
    fields = tuple((f, hints[f]) for f in cls._fields)  # type: ignore[attr-defined]
    return Schema(name, cls, fields, make=cls)


def _dataclass(cls: type, name: str) -> Schema:
    """A dataclass, its fields and types as it declares them, made by keyword."""
    hints = typing.get_type_hints(cls)
    fields = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
    return Schema(name, cls, fields, make=cls)


_SCHEMAS = (
    _named(Change, "Change"),
    _named(FailedStep, "FailedStep"),
    _named(Build, "Build"),
    _named(Signature, "Signature"),
    _named(Blamelist, "Blamelist"),
    _named(RevertRequest, "RevertRequest"),
    _named(RankedSuspect, "RankedSuspect"),
    _named(BuildRef, "BuildRef"),
    _named(PullRequestEvidence, "PullRequestEvidence"),
    _named(Verdict, "Verdict"),
    _named(PullBuild, "PullBuild"),
    _named(Streak, "Streak"),
    Schema(
        "FailureRun",
        FailureRun,
        (
            ("seen", array),
            ("upto", array),
            ("lines", list[str]),
            ("base", int),
            ("end", int),
            ("open", bool),
            ("_horizon", float),
        ),
        shared=True,
    ),
    Schema(
        "FailureMemory",
        FailureMemory,
        (
            ("_tests", dict[str, FailureRun]),
            ("_runs", dict[str, list[tuple[FailureRun, int]]]),
            ("_horizon", float),
            ("_recorded", int),
        ),
    ),
    Schema(
        "Landings",
        Landings,
        (
            ("seen", dict[str, float]),
            ("_by_origin", dict[str, dict[str, float]]),
            ("_horizon", float),
            ("_newest", float),
            ("_noted", int),
        ),
        derived=(("_blamelists", dict),),
    ),
    _named(CaseFlake, "CaseFlake"),
    Schema("FlakyCases", FlakyCases, (("_cases", dict[str, CaseFlake]),)),
    Schema("FlakeMemory", FlakeMemory, (("_at", dict[str, deque[int]]), ("cases", FlakyCases))),
    Schema(
        "PullRequestBuilds",
        PullRequestBuilds,
        (
            ("_builds", dict[int, list[PullBuild]]),
            ("_last", dict[str, tuple[float, bool]]),
            ("_horizon", float),
        ),
        derived=(("_due", lambda: float("-inf")), ("_newest", lambda: None)),
    ),
    Schema(
        "BuilderState",
        BuilderState,
        (
            ("green_at", float | None),
            ("untested", list[Change]),
            ("opening", tuple[Change, ...]),
            ("ended", bool),
            ("order", int),
            ("built_upto", float),
            ("builds", int),
            ("line", str),
            ("tags", frozenset[str]),
            ("pull_requests", bool),
            ("tolerated", bool),
            ("run", FailureRun),
        ),
        shared=True,
    ),
    Schema(
        "OpenStreak",
        OpenStreak,
        (
            ("first", Build),
            ("failing", list[Build]),
            ("signatures", list[Signature | None]),
            ("infra", list[bool]),
            ("run", FailureRun),
            ("suspects", tuple[Change, ...]),
            ("verdict", Verdict | None),
            ("evidence", frozenset[str]),
            ("green_at", float | None),
            ("blamelist", Blamelist | None),
        ),
        shared=True,
    ),
    Schema(
        "Bisection",
        Bisection,
        (
            ("parent", str),
            ("changes", tuple[Change, ...]),
            ("failing", frozenset[str]),
            ("lo", int),
            ("hi", int),
            ("parent_checked", bool),
            ("probes", list[str]),
        ),
    ),
    # The post-verdict machine's state, which the plugin holds across restarts.
    _dataclass(RequestKey, "RequestKey"),
    _dataclass(GreenRevisions, "GreenRevisions"),
    _dataclass(Verifying, "Verifying"),
    _dataclass(Bisecting, "Bisecting"),
    _dataclass(MachineState, "MachineState"),
)

# What a tracker's memory is, field by field: its state (``__getstate__``)
# but what its policy makes (the policy and the sets read off it).
_TRACKER: tuple[tuple[str, Any], ...] = (
    ("_builders", dict[str, BuilderState]),
    ("_streaks", dict[str, OpenStreak]),
    ("_intersectable", dict[str, tuple[int, str, OpenStreak]]),
    ("_branches", set[str | None]),
    ("_failures", FailureMemory),
    ("_landings", Landings),
    ("_flakes", FlakeMemory),
    ("_pointing", dict[str, dict[str, frozenset[str]]]),
    ("_proposed", dict[str, RevertRequest | None]),
    ("_shorts", dict[tuple[int, bool], str]),
    ("_steps", dict[str, frozenset[str]]),
    ("_pulls", PullRequestBuilds),
)
_FROM_POLICY = frozenset({"policy", "_green", "_guards"})
_TRACKER_TYPE = tuple.__class_getitem__(tuple(t for _, t in _TRACKER))


def _schema_of(codec: Codec) -> str:
    """The digest of every class a codec holds and of the tracker's fields: a document's schema."""
    tracker = repr([(n, codec.type_name(t)) for n, t in _TRACKER])
    return hashlib.sha256((codec.digest() + tracker).encode()).hexdigest()


def _format_2(schema: Schema) -> Schema:
    """A class as format 2 held it: a flaky case's record had no runs seen."""
    if schema.cls is not CaseFlake:
        return schema
    fields = tuple((n, t) for n, t in schema.fields if n != "since")
    # Made by keyword: the field format 2 lacks takes its default (empty).
    return dataclasses.replace(schema, fields=fields)


def _format_1(schema: Schema) -> Schema:
    """A class as format 1 held it: format 2's, and the machine had no builds requested again."""
    schema = _format_2(schema)
    if schema.cls is not MachineState:
        return schema
    fields = tuple((n, t) for n, t in schema.fields if n != "requested_again")
    # Made by keyword: the field format 1 lacks takes its default (an empty set).
    return dataclasses.replace(schema, fields=fields)


CODEC = Codec(_SCHEMAS)
SCHEMA = _schema_of(CODEC)
# Formats 2 and 1, as the releases before wrote them (the schemas their documents carry).
_FORMAT_2 = Codec(tuple(map(_format_2, _SCHEMAS)))
SCHEMA_2 = _schema_of(_FORMAT_2)
_FORMAT_1 = Codec(tuple(map(_format_1, _SCHEMAS)))
SCHEMA_1 = _schema_of(_FORMAT_1)
# The (format, schema) of every document this release reads, and the codec reading it.
_READERS: tuple[tuple[int, str, Codec], ...] = (
    (FORMAT, SCHEMA, CODEC),
    (2, SCHEMA_2, _FORMAT_2),
    (1, SCHEMA_1, _FORMAT_1),
)


def check_fields() -> None:
    """Raise FormatError if a class the format holds has fields the format does not list.

    A slotted class's slots, a NamedTuple's fields, a tracker's state: a
    field added in the core but not here would be silently lost.
    """
    for schema in _SCHEMAS:
        listed = {name for name, _ in (*schema.fields, *schema.derived)}
        declared = getattr(schema.cls, "_fields", None) or getattr(schema.cls, "__slots__", None)
        actual = set(declared) if declared is not None else listed
        if listed != actual:
            raise FormatError(f"{schema.name} holds {sorted(actual ^ listed)} unlisted")
    state = set(StreakTracker().__getstate__()) - _FROM_POLICY
    if state != {name for name, _ in _TRACKER}:
        raise FormatError(f"a tracker holds {sorted(state)}, the format lists others")


def migrated(document: Any) -> Any:
    """The document in this release's format, through the written migrations (if any)."""
    seen = set()
    while isinstance(document, dict) and document.get("format") in MIGRATIONS:
        version = document["format"]
        if version == FORMAT or version in seen:
            break
        seen.add(version)
        document = MIGRATIONS[version](document)
    return document


def check_header(document: Any) -> Mapping[str, Any]:
    """The checked header of a saved document (migrated): of a format and schema read here."""
    return _reading(document)[0]


def _reading(document: Any) -> tuple[Mapping[str, Any], Codec]:
    """A saved document (migrated), checked, and the codec of its format."""
    document = migrated(document)
    if not isinstance(document, dict):
        raise FormatError("a saved document is an object")
    version, schema = document.get("format"), document.get("schema")
    for known, digest, codec in _READERS:
        if version == known and schema == digest:
            return document, codec
    if not any(version == known for known, _, _ in _READERS):
        raise FormatChanged(f"format {version!r}, this release reads format {FORMAT}")
    raise FormatChanged(f"format {version} of other fields (a release changed them)")


def save_tracker(tracker: StreakTracker) -> dict[str, Any]:
    """The tracker's memory as a document (call where nothing feeds the tracker meanwhile)."""
    state = tracker.__getstate__()
    if set(state) - _FROM_POLICY != {name for name, _ in _TRACKER}:
        raise FormatError("the tracker holds fields the format does not list")
    values = tuple(state[name] for name, _ in _TRACKER)
    return {"format": FORMAT, "schema": SCHEMA, "tracker": CODEC.encode(values, _TRACKER_TYPE)}


def restore_tracker(document: Any, policy: Policy) -> StreakTracker:
    """A tracker for ``policy`` holding the memory ``document`` saved (FormatError if none)."""
    header, codec = _reading(document)
    values = codec.decode(header["tracker"], _TRACKER_TYPE)
    tracker = StreakTracker(policy)
    state = tracker.__getstate__()
    state.update(zip((name for name, _ in _TRACKER), values, strict=True))
    tracker.__setstate__(state)
    return tracker


class RecordKind:
    """A kind of held record: a dict of named fields of declared types (see ``plugin.held``)."""

    def __init__(self, name: str, fields: Mapping[str, Any]) -> None:
        self.name = name
        self.fields = tuple(fields.items())
        self._type = tuple.__class_getitem__(tuple(t for _, t in self.fields))
        # Compiled now: a field of a type the format cannot hold fails at registration.
        CODEC.encoder(self._type)
        CODEC.decoder(self._type)

    def save(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """``state`` (every field of the kind, no other) as a document."""
        if set(state) != {name for name, _ in self.fields}:
            raise FormatError(f"a {self.name} record holds exactly its fields")
        values = tuple(state[name] for name, _ in self.fields)
        document = CODEC.encode(values, self._type)
        return {"format": FORMAT, "schema": SCHEMA, "kind": self.name, "record": document}

    def restore(self, document: Any) -> dict[str, Any]:
        """The fields a document of this kind holds (FormatError if it holds none)."""
        header, codec = _reading(document)
        if header.get("kind") != self.name:
            raise FormatError(f"a record of kind {header.get('kind')!r}, not {self.name!r}")
        values = codec.decode(header["record"], self._type)
        return {name: value for (name, _), value in zip(self.fields, values, strict=True)}


def _canonical(value: Any) -> Any:
    """A JSON-able form of a policy setting that is the same in every process."""
    if isinstance(value, frozenset | set):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, Mapping):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return repr(value)


def policy_digest(policy: Policy) -> str:
    """The policy's settings, as one digest (sets sorted: hashing is per process)."""
    fields = {f.name: _canonical(getattr(policy, f.name)) for f in dataclasses.fields(policy)}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
