"""The HTML report's promises that hold without a browser."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from buildbot_revert.policy import Policy
from simulator.evaluation import evaluate
from simulator.html_report import render_html
from simulator.replay import Selection, replay
from simulator.report_context import build_url_template, gather, github_repo, web_url
from simulator.store import HistoryStore

from .reports_fixtures import HOSTILE_AUTHOR, make_history


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _page(tmp_path: Path, meta: bool = True) -> str:
    store = HistoryStore(make_history(tmp_path / "h.sqlite", meta=meta))
    if meta:
        store.set_meta("build_url_template", "{master}/builders/{builder}/builds/{number}")
        store.conn.commit()
    result = replay(store, Policy(), Selection())
    ctx = gather(store, result, evaluate(result, store.labels()))
    store.close()
    return render_html(ctx)


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
