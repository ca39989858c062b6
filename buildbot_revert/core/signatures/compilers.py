"""Compiler and linker errors, read into keys that match across builds.

Compile and link keys are normalised so that the same error in two builds
gives the same key: the line and column go, the path is cut to start at the
last CPython source root (``Objects/``, ``Modules/``, ``Include/``, ...) or
else loses its ``../`` and absolute prefix, Windows separators become ``/``,
typographic quotes become ASCII, hex addresses become ``0x?`` and MSBuild's
trailing ``[...proj]`` goes.  Undefined symbols from GNU ld, lld, ld64 and
MSVC all become ``undefined symbol: NAME``.  The summary lines that merely
count or announce link errors (``collect2: error: ld returned 1 exit
status``, ``LNK1120: 1 unresolved externals``) are generic by themselves.

Every key holds a space (test identifiers never do), which is how the
comparisons tell a compile key from a test.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from buildbot_revert.core.signatures.lines import TIMESTAMP, source_path

_SRC = (
    r"(?P<path>(?:[A-Za-z]:)?[^\s:()\"'<>|]+?"
    r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|m|mm|S|s|asm|inc|y|def))"
)
# Matched against the last word before ": error: ", so the path needs no anchor.
_GCC_LOCATION_RE = re.compile(_SRC + r"(?::\d+)+")
_MSVC_RE = re.compile(
    r"\s*" + TIMESTAMP + r"\s*(?P<path>(?:[A-Za-z]:)?[^:()\"<>|]+?"
    r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|inc|def|rc))"
    r"\(\d+(?:,\d+)*\) ?: (?P<sev>fatal error|error) (?P<code>C\d+): (?P<msg>.+)"
)
_LNK_RE = re.compile(r"error (LNK\d+): (.+)")
_LINKER_NAME_RE = re.compile(r"(?:\S*/)?(?:ld|lld|ld\.\w+)")
_QUOTED_SYMBOL_RE = re.compile(r"[`'\u2018\"](.+?)['\u2019\"]")
_MACHO_SYMBOL_RE = re.compile(r"\s*\"(.+?)\", referenced from:")
# Summaries that only count or announce the real link errors printed above them.
_GENERIC_LINK_CODES = frozenset({"LNK1120"})

_SOURCE_ROOTS = frozenset(
    {
        "Objects", "Python", "Modules", "Include", "Parser", "PC", "PCbuild", "Lib",
        "Programs", "Tools", "Mac", "Misc", "iOS", "Android",
    }
)  # fmt: skip
_HEX_RE = re.compile(r"\b0x[0-9A-Fa-f]+\b")
_PROJECT_SUFFIX_RE = re.compile(r"\s*\[[^\]]*proj\]\s*$")
_SPACES_RE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _undefined_reference(line: str, at: int) -> str | None:
    m = _QUOTED_SYMBOL_RE.match(line, at + len("undefined reference to "))
    return f"undefined symbol: {m.group(1)}" if m is not None else None


def _undefined_symbol(line: str, at: int) -> str | None:
    symbol = line[at + len("undefined symbol: ") :].split(None, 1)
    return f"undefined symbol: {symbol[0]}" if symbol else None


def _unresolved_external(line: str, at: int) -> str | None:
    symbol = line[at + len("unresolved external symbol ") :].split(None, 1)
    if not symbol:
        return None
    name = symbol[0]
    return f"undefined symbol: {name[6:] if name.startswith('__imp_') else name}"


def _macho_reference(line: str, at: int) -> str | None:
    m = _MACHO_SYMBOL_RE.match(line)
    if m is None:
        return None
    name = m.group(1)
    # Mach-O prefixes C symbols with an underscore.
    return f"undefined symbol: {name[1:] if name.startswith('_') else name}"


def _multiple_definition(line: str, at: int) -> str | None:
    m = _QUOTED_SYMBOL_RE.match(line, at + len("multiple definition of "))
    return f"multiple definition: {m.group(1)}" if m is not None else None


def _missing_library(line: str, at: int) -> str | None:
    return f"ld: {_normalise_message(line[at + len('ld: ') :])}"


# The linkers' symbol errors, by the token that marks each: the first token
# a line holds decides how it is read, even when the reading finds nothing.
_SYMBOL_READERS: tuple[tuple[str, Callable[[str, int], str | None]], ...] = (
    ("undefined reference to ", _undefined_reference),
    ("undefined symbol: ", _undefined_symbol),
    ("unresolved external symbol ", _unresolved_external),
    ("referenced from:", _macho_reference),
    ("multiple definition of ", _multiple_definition),
    ("ld: cannot find ", _missing_library),
)
#: Every line holding one of these is offered to :func:`compile_key`.
COMPILE_TOKENS: tuple[str, ...] = ("error", *(token for token, _ in _SYMBOL_READERS))


def compile_key(line: str) -> str | None:
    """The normalised key of a compiler or linker error line, or None."""
    for token, read in _SYMBOL_READERS:
        at = line.find(token)
        if at >= 0:
            return read(line, at)
    if "error C" in line:
        key = _msvc_key(line)
        if key is not None:
            return key
    at = line.find("error LNK")
    if at >= 0:
        return _msvc_link_key(line, at)
    return _gcc_key(line)


def _msvc_key(line: str) -> str | None:
    m = _MSVC_RE.match(line)
    if m is None:
        return None
    path = source_path(m.group("path"), _SOURCE_ROOTS)
    msg = _normalise_message(m.group("msg"))
    return f"{path}: {m.group('sev')} {m.group('code')}: {msg}"


def _msvc_link_key(line: str, at: int) -> str | None:
    m = _LNK_RE.match(line, at)
    if m is None or m.group(1) in _GENERIC_LINK_CODES:
        return None
    return f"{m.group(1)}: {_normalise_message(m.group(2))}"


def _gcc_key(line: str) -> str | None:
    """GCC's and clang's ``path:line:col: error: ...``, or a linker's ``ld: error: ...``."""
    severity = "error"
    i = line.find(": error: ")
    if i < 0:
        severity = "fatal error"
        i = line.find(": fatal error: ")
        if i < 0:
            return None
    message = line[i + len(severity) + 4 :]
    words = line[:i].rsplit(None, 1)
    if not words:
        return None
    word = words[-1]
    m = _GCC_LOCATION_RE.fullmatch(word)
    if m is not None:
        path = source_path(m.group("path"), _SOURCE_ROOTS)
        return f"{path}: {severity}: {_normalise_message(message)}"
    if severity == "error" and _LINKER_NAME_RE.fullmatch(word):
        return f"ld: error: {_normalise_message(message)}"
    return None


def _normalise_message(msg: str) -> str:
    msg = msg.strip()
    if not msg.isascii():
        msg = msg.translate(_QUOTES)
    if msg.endswith("proj]"):
        msg = _PROJECT_SUFFIX_RE.sub("", msg)
    if "0x" in msg:
        msg = _HEX_RE.sub("0x?", msg)
    if "  " in msg or "\t" in msg:
        msg = _SPACES_RE.sub(" ", msg)
    return msg
