"""The changes of the shipped history: when CPython's main moves, who moves it, and what.

Commit times follow a daily and weekly rhythm with bursts on the dates that
made 2024 busy (the 3.13 feature freeze, the PyCon US sprints, the core
developer sprint, release days).  Each change gets an author from a skewed
set of fictional core developers and contributors (the history must not pin
made-up breakages on real people), a CPython-style title
``gh-NNNNN: ... (#NNNNN)``, a message, the files it touched and its pull
request number.  Every number here is an assumption unless
``history/README.md`` cites a source for it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta


@dataclass
class ChangeRec:
    """A change while the generator works on it (ids are given at the end)."""

    when: float
    revision: str
    author: str
    title: str
    message: str
    files: tuple[str, ...]
    pr_number: int
    area: str
    kind: str = "normal"  # normal, revert, fix, reland, backport
    index: int = -1  # position among the changes of its branch
    branch: str = "main"
    # Set on the culprit of a breakage: the ids of the breakages it caused.
    breaks: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Area:
    """A part of CPython a change can touch, with the tests that watch it."""

    name: str
    weight: float
    lang: str  # "c" (compiled code), "py" (the standard library), "doc", "build"
    files: tuple[str, ...]
    tests: tuple[str, ...]  # test modules a breakage here makes fail
    nouns: tuple[str, ...]


AREAS: tuple[Area, ...] = (
    Area(
        "ceval",
        6,
        "c",
        (
            "Python/ceval.c",
            "Python/bytecodes.c",
            "Python/generated_cases.c.h",
            "Include/internal/pycore_ceval.h",
            "Python/specialize.c",
        ),
        ("test_sys", "test_generators", "test_dis", "test_opcache"),
        (
            "the specializing interpreter",
            "LOAD_ATTR specialization",
            "frame handling",
            "the eval breaker",
            "CALL specialization",
        ),
    ),
    Area(
        "jit",
        3,
        "c",
        (
            "Python/optimizer.c",
            "Python/optimizer_analysis.c",
            "Python/jit.c",
            "Tools/jit/_targets.py",
            "Include/internal/pycore_optimizer.h",
        ),
        ("test_capi", "test_opcache", "test_jit"),
        ("the tier 2 optimizer", "JIT stencils", "uop traces", "the executor cache"),
    ),
    Area(
        "gc",
        2.5,
        "c",
        ("Python/gc.c", "Python/gc_free_threading.c", "Include/internal/pycore_gc.h"),
        ("test_gc", "test_weakref", "test_finalization"),
        ("incremental GC", "the free-threaded GC", "GC thresholds", "weakref callbacks"),
    ),
    Area(
        "objects",
        6,
        "c",
        (
            "Objects/dictobject.c",
            "Objects/listobject.c",
            "Objects/typeobject.c",
            "Objects/unicodeobject.c",
            "Objects/longobject.c",
            "Objects/object.c",
        ),
        ("test_dict", "test_list", "test_descr", "test_unicode", "test_long", "test_capi"),
        (
            "dict resizing",
            "list.sort()",
            "type slots",
            "str.replace()",
            "int to str conversion",
            "immortal objects",
        ),
    ),
    Area(
        "freethreading",
        4,
        "c",
        (
            "Objects/dictobject.c",
            "Python/pystate.c",
            "Include/internal/pycore_critical_section.h",
            "Objects/obmalloc.c",
            "Python/lock.c",
        ),
        ("test_free_threading", "test_threading", "test_capi", "test_dict"),
        (
            "critical sections",
            "biased reference counting",
            "the per-thread freelists",
            "mimalloc integration",
            "thread-safe dict lookups",
        ),
    ),
    Area(
        "compiler",
        3,
        "c",
        (
            "Python/compile.c",
            "Python/flowgraph.c",
            "Python/codegen.c",
            "Parser/parser.c",
            "Grammar/python.gram",
        ),
        ("test_compile", "test_grammar", "test_syntax", "test_peepholer"),
        ("the code generator", "constant folding", "the PEG parser", "syntax errors"),
    ),
    Area(
        "capi",
        4,
        "c",
        (
            "Include/cpython/object.h",
            "Modules/_testcapimodule.c",
            "Modules/_testcapi/vectorcall.c",
            "Objects/abstract.c",
            "Doc/c-api/object.rst",
        ),
        ("test_capi", "test_stable_abi_ctypes"),
        (
            "PyUnicodeWriter",
            "PyLong_AsNativeBytes()",
            "the limited C API",
            "PyObject_GetOptionalAttr()",
            "PyTime_t",
        ),
    ),
    Area(
        "modules",
        5,
        "c",
        (
            "Modules/posixmodule.c",
            "Modules/_ssl.c",
            "Modules/socketmodule.c",
            "Modules/_sqlite/connection.c",
            "Modules/_ctypes/_ctypes.c",
            "Modules/_io/textio.c",
            "Modules/_datetimemodule.c",
            "Modules/mathmodule.c",
        ),
        (
            "test_os",
            "test_ssl",
            "test_socket",
            "test_sqlite3",
            "test_ctypes",
            "test_io",
            "test_datetime",
            "test_math",
        ),
        (
            "os.posix_spawn()",
            "SSL contexts",
            "socket.sendmsg()",
            "sqlite3 blobs",
            "ctypes structures",
            "TextIOWrapper",
            "datetime parsing",
            "math.fma()",
        ),
    ),
    Area(
        "build",
        2,
        "build",
        (
            "configure.ac",
            "configure",
            "Makefile.pre.in",
            "PCbuild/pythoncore.vcxproj",
            "Tools/build/freeze_modules.py",
            "pyconfig.h.in",
        ),
        ("test_sysconfig", "test_tools", "test_embed"),
        (
            "the build system",
            "configure checks",
            "the PCbuild project files",
            "deep-freeze",
            "cross-compilation",
        ),
    ),
    Area(
        "platform",
        1.5,
        "build",
        (
            "Tools/wasm/wasi.py",
            "Android/android.py",
            "iOS/testbed/__main__.py",
            "Lib/sysconfig/__init__.py",
            "Tools/wasm/emscripten/__main__.py",
        ),
        ("test_sysconfig", "test_platform", "test_embed"),
        ("the WASI build", "the Android testbed", "the iOS simulator testbed", "Emscripten"),
    ),
    Area(
        "asyncio",
        5,
        "py",
        (
            "Lib/asyncio/tasks.py",
            "Lib/asyncio/base_events.py",
            "Lib/asyncio/streams.py",
            "Lib/asyncio/queues.py",
            "Lib/asyncio/taskgroups.py",
        ),
        ("test_asyncio",),
        (
            "asyncio.TaskGroup",
            "asyncio.Queue.shutdown()",
            "the event loop shutdown",
            "eager tasks",
            "asyncio.Server.close()",
        ),
    ),
    Area(
        "stdlib",
        14,
        "py",
        (
            "Lib/pathlib/_local.py",
            "Lib/typing.py",
            "Lib/argparse.py",
            "Lib/inspect.py",
            "Lib/dataclasses.py",
            "Lib/enum.py",
            "Lib/zipfile/__init__.py",
            "Lib/tarfile.py",
            "Lib/shutil.py",
            "Lib/functools.py",
            "Lib/email/_header_value_parser.py",
            "Lib/json/encoder.py",
            "Lib/logging/__init__.py",
            "Lib/unittest/mock.py",
        ),
        (
            "test_pathlib",
            "test_typing",
            "test_argparse",
            "test_inspect",
            "test_dataclasses",
            "test_enum",
            "test_zipfile",
            "test_tarfile",
            "test_shutil",
            "test_functools",
            "test_email",
            "test_json",
            "test_logging",
            "test_unittest",
        ),
        (
            "pathlib.Path.walk()",
            "typing.TypeVar defaults",
            "argparse help output",
            "inspect.signature()",
            "dataclass slots",
            "enum aliases",
            "zipfile.Path",
            "tarfile filters",
            "shutil.copytree()",
            "functools.partial",
            "email header folding",
            "json.dumps()",
            "logging config",
            "unittest.mock autospec",
        ),
    ),
    Area(
        "repl",
        2.5,
        "py",
        (
            "Lib/_pyrepl/reader.py",
            "Lib/_pyrepl/unix_console.py",
            "Lib/_pyrepl/windows_console.py",
            "Lib/_pyrepl/simple_interact.py",
        ),
        ("test_pyrepl",),
        ("the new REPL", "REPL history", "multiline editing", "the Windows console"),
    ),
    Area(
        "tests",
        6,
        "py",
        (
            "Lib/test/support/__init__.py",
            "Lib/test/libregrtest/main.py",
            "Lib/test/test_capi/test_misc.py",
            "Lib/test/test_os.py",
            "Lib/test/support/script_helper.py",
        ),
        ("test_regrtest", "test_os", "test_capi", "test_support"),
        ("regrtest", "test.support helpers", "flaky tests", "test timeouts"),
    ),
    Area(
        "docs",
        14,
        "doc",
        (
            "Doc/library/stdtypes.rst",
            "Doc/whatsnew/3.13.rst",
            "Doc/library/asyncio-task.rst",
            "Doc/howto/logging.rst",
            "Doc/reference/datamodel.rst",
            "Doc/library/typing.rst",
            "Doc/c-api/init.rst",
            "Doc/tutorial/classes.rst",
        ),
        (),
        (
            "the data model docs",
            "What's New in 3.13",
            "the asyncio docs",
            "the logging HOWTO",
            "the typing docs",
            "the C API docs",
            "the tutorial",
        ),
    ),
    Area(
        "infra",
        3,
        "build",
        (
            ".github/workflows/build.yml",
            "Tools/build/generate_sbom.py",
            "Misc/sbom.spdx.json",
            "Tools/clinic/libclinic/clinic.py",
            ".pre-commit-config.yaml",
        ),
        ("test_clinic",),
        ("the CI workflows", "the SBOM", "Argument Clinic", "pre-commit hooks"),
    ),
)

_VERBS = {
    "c": ("Fix", "Fix", "Optimize", "Add", "Refactor", "Remove", "Use", "Avoid", "Clean up"),
    "py": ("Fix", "Fix", "Add", "Improve", "Deprecate", "Support", "Remove", "Speed up"),
    "doc": ("Docs: Improve", "Docs: Fix", "Docs: Clarify", "Docs: Document", "Docs: Update"),
    "build": ("Fix", "Update", "Add", "Simplify", "Remove"),
}

# Fictional authors, most active first.  A Zipf-like weight gives the real
# shape of a core team: a few people land most changes, a long tail lands one.
_CORE = (
    "vkovacs",
    "sergei-ostrov",
    "ealund",
    "awainwright",
    "pviktorin",
    "bpicard",
    "hvanrossen",
    "jzielinski",
    "nsobolev",
    "pgalindo",
    "mshanahan",
    "scolberg",
    "kfidgett",
    "esnowden",
    "szubair",
    "gvanderberg",
    "dhcorona",
    "mbdoom",
    "bbucher",
    "ikatriel",
    "bgarney",
    "tremark",
    "kintensity",
    "smlarson",
    "ndeily",
    "rkeith",
    "mhsmithers",
    "kaditya",
    "ggaotian",
    "rhettinger-r",
    "tjreedy-t",
    "lambv",
    "tyhg",
    "inada-m",
    "filipe-l",
    "vsajeev",
    "skirpich",
    "diegor",
    "ericvs",
    "jaraco-j",
)
_FIRST = (
    "alex",
    "maria",
    "chen",
    "priya",
    "tom",
    "ines",
    "omar",
    "yuki",
    "lena",
    "raj",
    "sofia",
    "noah",
    "amir",
    "julia",
    "kofi",
    "emma",
    "ivan",
    "mei",
    "lucas",
    "zara",
)
_LAST = (
    "smith",
    "nguyen",
    "kumar",
    "garcia",
    "novak",
    "tanaka",
    "okafor",
    "berg",
    "rossi",
    "haddad",
    "kim",
    "silva",
    "weber",
    "ali",
    "costa",
    "meyer",
    "sato",
    "lopez",
)

# Days that made 2024 busier (assumptions, from the 3.13 release schedule of
# PEP 719 and the community calendar as recalled): factor on the commit rate.
_BURSTS_2024 = (
    (date(2024, 4, 29), date(2024, 5, 8), 1.9),  # rush before 3.13.0b1 feature freeze
    (date(2024, 5, 20), date(2024, 5, 23), 1.7),  # PyCon US sprints
    (date(2024, 9, 23), date(2024, 9, 27), 1.6),  # core developer sprint
)
# The year-end holidays, every year: 21 December to 2 January.
_HOLIDAY_FACTOR = 0.45
_RELEASE_DAYS_2024 = (
    date(2024, 1, 17),
    date(2024, 2, 15),
    date(2024, 3, 12),
    date(2024, 4, 9),
    date(2024, 5, 8),
    date(2024, 6, 5),
    date(2024, 6, 27),
    date(2024, 7, 18),
    date(2024, 7, 31),
    date(2024, 9, 6),
    date(2024, 10, 1),
    date(2024, 10, 7),
    date(2024, 10, 15),
    date(2024, 11, 19),
    date(2024, 12, 17),
)
# Monday..Sunday and hour-of-day (UTC) weights: Europe and the Americas
# overlap in the afternoon UTC; nights and weekends are quieter.
_WEEKDAY = (1.1, 1.15, 1.15, 1.1, 1.0, 0.55, 0.5)
_HOURS = (
    0.35,
    0.3,
    0.3,
    0.3,
    0.35,
    0.4,
    0.5,
    0.6,
    0.8,
    0.9,
    1.0,
    1.1,
    1.3,
    1.35,
    1.4,
    1.4,
    1.35,
    1.3,
    1.2,
    1.1,
    1.0,
    0.9,
    0.7,
    0.5,
)
# CPython's backport bot: it opens (and, once approved, merges) the backport
# PRs of changes labelled "needs backport to 3.x".  A bot, not a person.
BACKPORT_BOT = "miss-islington"
# Commits per weekday-weighted day; ~3,800 changes in 2024 before fixes.
DAILY_RATE = 11.0


def _poisson(rng: random.Random, lam: float) -> int:
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def _day_factor(day: date) -> float:
    factor = _WEEKDAY[day.weekday()]
    if (day.month == 12 and day.day >= 21) or (day.month == 1 and day.day <= 2):
        factor *= _HOLIDAY_FACTOR
    if day.year == 2024:
        for first, last, burst in _BURSTS_2024:
            if first <= day <= last:
                factor *= burst
        if day in _RELEASE_DAYS_2024:
            factor *= 1.3
    return factor


def commit_times(rng: random.Random, start: float, days: int) -> list[float]:
    """Commit times (epoch seconds) over ``days`` days from ``start``, sorted."""
    hour_total = sum(_HOURS)
    times: list[float] = []
    first_day = datetime.fromtimestamp(start, UTC).date()
    for d in range(days):
        day = first_day + timedelta(days=d)
        n = _poisson(rng, DAILY_RATE * _day_factor(day))
        for _ in range(n):
            x = rng.random() * hour_total
            hour = 0
            while x > _HOURS[hour]:
                x -= _HOURS[hour]
                hour += 1
            times.append(start + d * 86400 + hour * 3600 + rng.random() * 3600)
    times.sort()
    return times


class ChangeFactory:
    """Makes the content of changes: authors, titles, files, PR numbers."""

    def __init__(
        self, rng: random.Random, start: float, end: float, used_prs: set[int] | None = None
    ) -> None:
        self.rng = rng
        self.start, self.end = start, end
        contributors = sorted({f"{rng.choice(_FIRST)}{rng.choice(_LAST)}" for _ in range(300)})
        self.authors = list(_CORE) + contributors
        # Zipf weights over the core team, then a flat long tail: about 70 %
        # of changes come from the core team (assumption).
        core_w = [1.0 / (i + 1) ** 0.9 for i in range(len(_CORE))]
        scale = 0.7 / sum(core_w)
        tail = 0.3 / len(contributors)
        self.weights = [w * scale for w in core_w] + [tail] * len(contributors)
        self.area_weights = [a.weight for a in AREAS]
        # PR numbers are unique across factories that share this set (main's
        # and the backports').
        self.used_prs: set[int] = set() if used_prs is None else used_prs

    def revision(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"

    def _pr_for(self, when: float, opened_after: float | None = None) -> int:
        # PR numbers grew from about #113,500 to #128,400 over 2024 (assumption
        # read off GitHub's numbering); a PR is opened days before it merges,
        # and a follow-up (fix, revert, backport) not before what it follows.
        opened = when - self.rng.expovariate(1 / (6 * 86400))
        if opened_after is not None:
            opened = min(when, max(opened, opened_after))
        frac = (opened - self.start) / (365 * 86400)
        pr = int(113_500 + frac * 14_900) + self.rng.randint(0, 40)
        while pr in self.used_prs:
            pr += 1
        self.used_prs.add(pr)
        return pr

    def normal(self, when: float) -> ChangeRec:
        rng = self.rng
        area = rng.choices(AREAS, self.area_weights)[0]
        author = rng.choices(self.authors, self.weights)[0]
        pr = self._pr_for(when)
        issue = pr - rng.randint(1, 2500)
        noun = rng.choice(area.nouns)
        verb = rng.choice(_VERBS[area.lang])
        subject = f"{verb} {noun}"
        if area.lang == "doc" and rng.random() < 0.5:
            title = f"{subject} (#{pr})"
        else:
            title = f"gh-{issue}: {subject} (#{pr})"
        n_files = 1 + min(int(rng.expovariate(0.7)), len(area.files) - 1)
        files = sorted(rng.sample(area.files, n_files))
        if area.lang in ("c", "py"):
            if area.tests and rng.random() < 0.7:
                files.append(f"Lib/test/{rng.choice(area.tests)}.py")
            files.append(f"Misc/NEWS.d/next/{_news_section(area)}/{_news_name(rng, when, issue)}")
        body = rng.choice(_BODIES).format(noun=noun, issue=issue)
        message = f"{title}\n\n{body}"
        if rng.random() < 0.25:
            other = rng.choices(self.authors, self.weights)[0]
            message += f"\n\nCo-authored-by: {other} <{other}@users.noreply.github.com>"
        return ChangeRec(when, self.revision(), author, title, message, tuple(files), pr, area.name)

    def revert(self, when: float, culprit: ChangeRec, reverter: str | None = None) -> ChangeRec:
        pr = self._pr_for(when, opened_after=culprit.when)
        author = reverter or self.rng.choices(self.authors[:12])[0]
        title = f'Revert "{culprit.title}" (#{pr})'
        message = (
            f"{title}\n\nThis reverts commit {culprit.revision}.\n\n"
            f"It broke the buildbots (see #{culprit.pr_number})."
        )
        return ChangeRec(
            when,
            self.revision(),
            author,
            title,
            message,
            culprit.files,
            pr,
            culprit.area,
            kind="revert",
            branch=culprit.branch,
        )

    def fix_forward(
        self, when: float, culprit: ChangeRec, what: str, author: str | None = None
    ) -> ChangeRec:
        """A fix of ``culprit``'s breakage on its branch, by ``author`` or someone likely."""
        rng = self.rng
        pr = self._pr_for(when, opened_after=culprit.when)
        issue = _issue_of(culprit) or pr - rng.randint(1, 300)
        # Usually the culprit's author fixes it (the original author when the
        # culprit is a bot's backport), otherwise another core developer.
        someone_else = rng.random() >= 0.6
        author = author or culprit.author
        if someone_else or author == BACKPORT_BOT:
            author = rng.choices(self.authors[:15])[0]
        prefix = "" if culprit.branch == "main" else f"[{culprit.branch}] "
        title = f"{prefix}gh-{issue}: Fix {what} after #{culprit.pr_number} (#{pr})"
        touched = [f for f in culprit.files if not f.startswith("Misc/NEWS.d/")] or list(
            culprit.files
        )
        files = tuple(sorted(rng.sample(touched, max(1, min(len(touched), rng.randint(1, 2))))))
        message = f"{title}\n\nFollow-up to {culprit.revision[:10]}: {what}."
        return ChangeRec(
            when,
            self.revision(),
            author,
            title,
            message,
            files,
            pr,
            culprit.area,
            kind="fix",
            branch=culprit.branch,
        )

    def backport(self, when: float, original: ChangeRec, branch: str, bot: bool) -> ChangeRec:
        """``original`` cherry-picked onto ``branch``, the way miss-islington does it.

        The title is CPython's backport form, ``[3.13] gh-N: ... (GH-<main PR>)
        (#<backport PR>)``; the message keeps the original's body and ends with
        the ``(cherry picked from commit ...)`` line.  A bot backport credits
        the original author as co-author; a manual one is by the author.
        """
        # The bot opens the backport PR when the original merges.
        pr = self._pr_for(when, opened_after=original.when)
        base = original.title.rsplit(" (#", 1)[0]
        title = f"[{branch}] {base} (GH-{original.pr_number}) (#{pr})"
        body = original.message.split("\n\n", 1)[1] + "\n" if "\n\n" in original.message else ""
        message = f"{title}\n\n{body}(cherry picked from commit {original.revision})"
        author = original.author
        if bot:
            author = BACKPORT_BOT
            message += (
                f"\n\nCo-authored-by: {original.author}"
                f" <{original.author}@users.noreply.github.com>"
            )
        return ChangeRec(
            when,
            self.revision(),
            author,
            title,
            message,
            original.files,
            pr,
            original.area,
            kind="backport",
            branch=branch,
        )

    def reland(self, when: float, culprit: ChangeRec) -> ChangeRec:
        pr = self._pr_for(when, opened_after=culprit.when)
        base = culprit.title.rsplit(" (#", 1)[0]
        title = f"{base} (reland) (#{pr})"
        message = f"{title}\n\nReland of #{culprit.pr_number} with the buildbot failure fixed."
        return ChangeRec(
            when,
            self.revision(),
            culprit.author,
            title,
            message,
            culprit.files,
            pr,
            culprit.area,
            kind="reland",
        )


def _issue_of(change: ChangeRec) -> int | None:
    title = change.title
    if title.startswith("[") and "] " in title:
        title = title.split("] ", 1)[1]  # a backport: "[3.13] gh-N: ..."
    if title.startswith("gh-"):
        return int(title[3:].split(":", 1)[0])
    return None


def _news_section(area: Area) -> str:
    return {"c": "Core_and_Builtins", "py": "Library", "build": "Build"}.get(area.lang, "Library")


def _news_name(rng: random.Random, when: float, issue: int) -> str:
    stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d-%H-%M-%S")
    nonce = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))
    return f"{stamp}.gh-issue-{issue}.{nonce}.rst"


_BODIES = (
    "This changes {noun} so that the common case no longer takes the slow path.",
    "The previous behaviour of {noun} was inconsistent with the documentation.",
    "Follow-up of gh-{issue}: handle the remaining corner cases in {noun}.",
    "Make {noun} thread-safe in the free-threaded build.",
    "Add tests for {noun} and fix the bug they found.",
    "{noun} could leak a reference on the error path.",
)
