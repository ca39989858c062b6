"""The link at the level of test cases: did the change's hunks touch what fails?

After a long gap since green (the ``stale-green`` guard), a file name says
little: a change that edited ``tests/test_x.py`` by adding one new case
does not explain other cases of that file failing.  With the change's diff
(:mod:`.diffs`), a failing test case (its id resolved by :mod:`.testids`)
is linked to the change when:

* a hunk in the case's file added the case (a ``def test_y`` added), or
  edited it (a hunk inside it, or changing its ``def`` line); or
* a hunk touched the code the case is named after (``tests/test_x.py``:
  ``x.py``; ``test_ssl``: ``Modules/_ssl.c``), the rule of
  :func:`.relevance.touches_code_of`, any file but the test's own; or
* the failure names no case (a whole module fails, say on import), and a
  hunk touched its file.

A compile or link error is linked as before (:func:`.relevance.ties`: the
change touched the file it names).  :func:`link_cases` answers with a
:class:`CaseLink`: whether anything linked, and a sentence naming the cases
and hunks that did, or saying why none did.  Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from buildbot_revert.core.diffs import Diff, Hunk
from buildbot_revert.core.relevance import ties, touches_code_of
from buildbot_revert.core.signatures.signature import module_of
from buildbot_revert.core.testids import in_file, resolve

# How many links, or unlinked cases, a sentence names.
_SHOWN = 3


class CaseLink(NamedTuple):
    """Whether the diff linked the change to a failure, and the sentence saying how."""

    linked: bool
    sentence: str
    # Whether a hunk added or edited a failing case itself (not only its
    # code): what lifts the configuration-specific guard too.
    edits_cases: bool = False


def _case_links(
    ident: str, hunks: Sequence[Hunk], environment: Mapping[str, tuple[str, ...]]
) -> list[str]:
    """How the hunks link the failing ``ident`` (a case, a module or a compile key)."""
    if " " in ident:
        files = [h.path for h in hunks]
        return [f"it touched the file of {ident}"] if ties([ident], files, environment) else []
    ref = resolve(ident)
    own = [h for h in hunks if in_file(h.path, ref)] if ref.files else list(hunks)
    links: list[str] = []
    function = ref.function
    for hunk in own:
        if function is None:
            if ref.files:
                links.append(f"it edited {ident} ({hunk.where()})")
        elif function in hunk.added_defines():
            links.append(f"it added the failing case {ident} ({hunk.where()})")
        elif function in hunk.defines() or hunk.encloses(function):
            links.append(f"it edited the failing case {ident} ({hunk.where()})")
    module = module_of(ident)
    for hunk in hunks:
        if hunk in own and ref.files:
            continue
        if touches_code_of(module, [hunk.path], environment) and not in_file(hunk.path, ref):
            links.append(
                f"it touched {hunk.path}, the code {module} is named after ({hunk.where()})"
            )
    return links


def link_cases(
    failing: Iterable[str],
    diff: Diff,
    code_files: Sequence[str],
    environment: Mapping[str, tuple[str, ...]],
) -> CaseLink:
    """Whether ``diff``'s hunks (in ``code_files``, not documentation) link what fails."""
    keep = set(code_files)
    hunks = [h for h in diff.hunks if h.path in keep]
    failing = sorted(failing)
    links: list[str] = []
    for ident in failing:
        # Every case is asked (not only until _SHOWN links): whether one was
        # added or edited decides the configuration-specific guard.
        links.extend(_case_links(ident, hunks, environment))
    if links:
        edits = any(link.startswith(("it added the failing", "it edited")) for link in links)
        return CaseLink(True, "; ".join(links[:_SHOWN]), edits_cases=edits)
    shown = ", ".join(failing[:_SHOWN]) + (
        f" and {len(failing) - _SHOWN} more" if len(failing) > _SHOWN else ""
    )
    where = ", ".join(h.where() for h in hunks[:_SHOWN]) or "no hunk outside documentation"
    return CaseLink(
        False,
        f"its hunks ({where}) added or edited none of the failing cases ({shown}) "
        "and touched none of the code they are named after",
    )
