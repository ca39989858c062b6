"""Bidi overrides, escapes and controls in a title, an author or a builder name reach neither
the dashboard's page nor its index.json: both show the text in the order it is read."""

from __future__ import annotations

import json
from dataclasses import replace

from buildbot_revert.dashboard.render import render_html, render_json
from tests.core.test_untrusted import BIDI_AND_CONTROLS
from tests.dashboard.test_render import page

# Shows as "gh-7: exe.txt" where the right-to-left override is honoured.
TITLE = "gh-7: \u202etxt.exe\u202c \x1b]0;owned\x07 \x9b31m \u2067x\u2069"
AUTHOR = "\u200fmallory\u061c\x1b[2K"
BUILDER = "AMD64 \u202eubuntu\x00\x7f"
REASON = "touched test_\u202ex\u202c"


def hostile_page():
    """The test page with every untrusted text it shows replaced by a hostile one."""
    base = page()
    [red] = base.red
    [change] = red.changes
    red = replace(
        red,
        builder=BUILDER,
        explanation=REASON,
        changes=(replace(change, title=TITLE, author=AUTHOR),),
        ranked=tuple(replace(s, title=TITLE, reasons=(REASON,)) for s in base.recent[1].ranked),
    )
    pending = tuple(replace(p, title=TITLE, builder=BUILDER, detail=REASON) for p in base.pending)
    reverts = tuple(replace(p, title=TITLE, reported_wrong_by=AUTHOR) for p in base.reverts)
    recent = tuple(
        replace(v, builder=BUILDER, title=TITLE, explanation=REASON) for v in base.recent
    )
    return replace(base, red=(red,), pending=pending, reverts=reverts, recent=recent)


def test_the_page_holds_no_bidi_or_control_character():
    html = render_html(hostile_page())
    assert not BIDI_AND_CONTROLS.search(html)
    assert "gh-7: txt.exe ]0;owned 31m x" in html  # the text itself is there, in reading order
    assert "mallory[2K" in html


def test_index_json_holds_no_bidi_or_control_character():
    text = render_json(hostile_page())
    body = json.loads(text)
    assert not BIDI_AND_CONTROLS.search(json.dumps(body, ensure_ascii=False))
    [red] = body["red"]
    assert red["builder"] == "AMD64 ubuntu"
    assert red["changes"][0]["title"] == "gh-7: txt.exe ]0;owned 31m x"
    assert red["changes"][0]["author"] == "mallory[2K"
