"""The HTML report's promises that hold without a browser."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from buildbot_revert.core.policy import Policy
from simulator.analysis.evaluation import evaluate
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.reports.html import render_html
from simulator.reports.model import build_url_template, gather, github_repo, web_url
from simulator.reports.text import to_json
from tests.simulator.reports_fixtures import (
    CONTROL_TITLE,
    HOSTILE_AUTHOR,
    MISSED_BUILDER,
    make_history,
)

# What must never reach the page: C0 controls but tab and newline, DEL, C1,
# and the bidirectional marks, embeddings, overrides and isolates.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


class Tables(HTMLParser):
    """The text of every cell of every table, by the table's id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.paragraphs: list[str] = []
        self._table: list[list[str]] | None = None
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th", "p"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table is not None and self._text is not None:
            self._table[-1].append("".join(self._text))
            self._text = None
        elif tag == "p" and self._text is not None:
            self.paragraphs.append("".join(self._text))
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def _page(tmp_path: Path, meta: bool = True, labels: bool = True, guarded: bool = False) -> str:
    store = HistoryStore(
        make_history(tmp_path / "h.sqlite", meta=meta, labels=labels, guarded=guarded)
    )
    if meta:
        store.set_meta("build_url_template", "{master}/builders/{builder}/builds/{number}")
        store.conn.commit()
    result = replay(store, Policy(), Selection())
    ctx = gather(store, result, evaluate(result, store.labels()) if labels else None)
    store.close()
    return render_html(ctx)


def _tables(page: str) -> Tables:
    parser = Tables()
    parser.feed(page)
    return parser


def test_self_contained_and_inert(tmp_path: Path) -> None:
    page = _page(tmp_path)
    parser = Tags()
    parser.feed(page)
    names = [t for t, _ in parser.tags]
    assert "script" not in names and "img" not in names and "link" not in names
    csp = [a for t, a in parser.tags if t == "meta" and a.get("http-equiv")]
    assert "default-src 'none'" in (csp[0]["content"] or "")
    assert names.count("svg") == 4
    hrefs = [a["href"] for t, a in parser.tags if t == "a"]
    assert hrefs and all(h and h.startswith("https://") for h in hrefs)
    assert "https://buildbot.example.org/builders/AMD64%20Ubuntu/builds/2" in hrefs
    assert "https://github.com/python/cpython/pull/101" in hrefs
    # Untrusted text is escaped and its @-mentions defused.
    assert HOSTILE_AUTHOR not in page
    assert "@\u200boctocat &lt;img src=x onerror=alert(2)&gt;" in page


def test_no_links_without_meta(tmp_path: Path) -> None:
    assert "<a " not in _page(tmp_path, meta=False)


def test_meta_values_that_would_make_bad_links_are_ignored() -> None:
    assert web_url("javascript:alert(1)") is None
    assert web_url('https://x.org/"onmouseover=') is None
    assert web_url("https://buildbot.python.org/all") == "https://buildbot.python.org/all"
    assert github_repo("python/cpython") == "python/cpython"
    assert github_repo("python/cpython/../x") is None
    assert github_repo("evil.com/x y") is None
    assert build_url_template("javascript:{number}").startswith("{master}")
    assert build_url_template("{master}/{nope}").startswith("{master}/#/")


def test_guards_and_missed_breakages_as_in_the_json(tmp_path: Path) -> None:
    store = HistoryStore(make_history(tmp_path / "h.sqlite", guarded=True))
    result = replay(store, Policy(), Selection())
    ctx = gather(store, result, evaluate(result, store.labels()))
    store.close()
    doc = to_json(ctx)
    parsed = _tables(render_html(ctx))
    header, *rows = parsed.tables["guards"]
    assert header == ["guard", "on", "declined", "cost: real breakages", "saved: flakes or infra"]
    assert {r[0]: r[1:] for r in rows} == {
        name: [
            "yes" if g["enabled"] else "no",
            str(g["declined"]),
            str(g["true_breakages"]),
            str(g["flakes_or_infra"]),
        ]
        for name, g in doc["guards"].items()
    }
    header, *rows = parsed.tables["missed"]
    assert header == ["broke", "change", "PR", "author", "title", "builds", "verdict"]
    assert [r[1] for r in rows] == [m[:10] for m in doc["evaluation"]["missed_revisions"]]
    assert rows[0][3] == "mallory" and rows[0][5] == f"{MISSED_BUILDER} #2"
    assert rows[0][6].startswith("generic-failure: the failing builds show only generic")
    assert any(
        p.startswith("Attributable breakages the policy did not propose (labels): 1 of 2.")
        for p in parsed.paragraphs
    )


def test_no_cost_columns_nor_missed_breakages_without_labels(tmp_path: Path) -> None:
    page = _page(tmp_path, labels=False, guarded=True)
    parsed = _tables(page)
    assert parsed.tables["guards"][0] == ["guard", "on", "declined"]
    assert "missed" not in parsed.tables and "Missed breakages" not in page


def test_the_precision_figures_say_why_they_differ(tmp_path: Path) -> None:
    parsed = _tables(_page(tmp_path))
    summary = {row[0]: row[1] for row in parsed.tables["summary"]}
    assert summary["precision (labels)"] == "33.3%"
    assert (
        summary["estimated precision, strict (later reverted in the history)"] == "33.3% (1 of 3)"
    )
    (note,) = [p for p in parsed.paragraphs if p.startswith("The labelled precision")]
    assert "ground truth" in note and "only if a later commit reverts that change" in note
    assert "runs low" in note and "runs high" in note


def test_control_and_bidi_characters_never_reach_the_page(tmp_path: Path) -> None:
    page = _page(tmp_path, guarded=True)
    assert "\u202e" in CONTROL_TITLE and "\x07" in CONTROL_TITLE and "<script>" in CONTROL_TITLE
    assert not CONTROLS.search(page)
    title = [r[4] for r in _tables(page).tables["missed"][1:]]
    assert title == ["gh-400: txt.exe [31m <script>alert(4)</script> x"]
    assert "<script>" not in page
