"""The page rendered from a model holding hostile texts: escaped, no script, the same JSON."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from buildbot_revert.dashboard.model import (
    BlindSpotView,
    ChangeView,
    Page,
    ProposalView,
    QualifiedView,
    RedStreakView,
    Status,
    SuspectView,
    VerdictView,
    WeekView,
)
from buildbot_revert.dashboard.render import href, render_html, render_json

NOW = 1_764_000_000.0
TITLE = "<script>window.pwned=1</script> & \"quotes\" 'too' <img src=x onerror=alert(1)>"
BUILDER = 'evil"><b>builder</b>'
URL = "https://github.com/python/cpython/pull/9"
# A streak's ranked suspects; a reason quotes a (hostile) test name.
REASON = "touched the code of test_<img src=x onerror=alert(4)>"
RANKED = (
    SuspectView("c" * 40, TITLE, 3.0, (REASON, "held by 1 of 2 other builders failing alike")),
    SuspectView("d" * 40, None, -3.0, ("documentation only",)),
)


def page(revert_url: str = URL) -> Page:
    change = ChangeView("a" * 40, "Ann <ann@example.org>", TITLE, NOW - 900, 7, None)
    proposal = ProposalView(
        revision="b" * 40, title=TITLE, builder=BUILDER, build_number=3, build_url=None,
        state="pending", outcome="waiting for its grace period", detail="<i>detail</i>",
        explanation="why <b>", mode="revert", decided_at=NOW - 60, due_at=NOW + 3540,
        filed_at=None, updated_at=NOW - 60, culprit_pr=7, culprit_url=None, revert_pr=None,
        revert_url=None, comment_url="javascript:alert(2)",
        qualified=(QualifiedView(BUILDER, 3, None, NOW - 60, None),),
    )  # fmt: skip
    filed = proposal.__class__(
        **{**proposal.__dict__, "state": "filed", "revert_pr": 9, "revert_url": revert_url,
           "reported_wrong_by": "<b>grace</b>", "reported_at": NOW - 30}
    )  # fmt: skip
    return Page(
        generated_at=NOW,
        status=Status(
            "RevertReporter",
            True,
            "comment",
            "python/cpython",
            True,
            3,
            0.0,
            True,
            "mode comment: comments",
        ),  # fmt: skip
        red=(
            RedStreakView(
                BUILDER,
                "http://m/#/builders/1",
                3,
                "http://m/#/builders/1/builds/3",
                NOW - 1800,
                4,
                (change,),
                2,
                NOW - 2400,
                True,
                "revert",
                "3 consecutive failing builds",
                "filed",
                revert_url,
            ),  # fmt: skip
        ),
        pending=(proposal,),
        reverts=(filed,),
        blind_spots=(BlindSpotView("flaky-builder", 4, 2, 12.5, "flaky <u>example</u>"),),
        window_start=NOW - 30 * 86400,
        recent=(
            VerdictView(BUILDER, 3, None, "infra", "disk <full>", NOW - 10, None, None, None),
            VerdictView(
                BUILDER,
                5,
                None,
                "multiple-changes",
                "2 changes",
                NOW - 5,
                None,
                None,
                None,
                ranked=RANKED,
            ),
        ),  # fmt: skip
        html_url="http://m/plugins/wsgi_dashboards/revert/index.html",
        json_url="http://m/plugins/wsgi_dashboards/revert/index.json",
        metrics=(WeekView("2025-W48", NOW - 3 * 86400, 4, 2, 1, 0, 1, 2),),
    )


class Tags(HTMLParser):
    """Every start tag and every href, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.hrefs += [v for k, v in attrs if k == "href" and v is not None]

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def test_untrusted_texts_are_text_and_bad_links_are_no_links():
    html = render_html(page())
    tags = parse(html)
    assert "script" not in tags.tags and "img" not in tags.tags and "i" not in tags.tags
    assert tags.tags.count("b") == 1  # the mode banner's own, not the builder's
    text = "".join(tags.text)
    assert TITLE in text and BUILDER in text and "<i>detail</i>" in text
    assert "disk <full>" in text and "flaky <u>example</u>" in text
    assert not any(h.lower().startswith("javascript") for h in tags.hrefs)
    assert URL in tags.hrefs  # the revert PR, linked
    assert "&lt;script&gt;window.pwned=1" in html


def test_ranked_suspects_show_with_their_scores_and_reasons_escaped():
    html = render_html(page())
    tags = parse(html)
    assert "img" not in tags.tags
    assert tags.tags.count("ol") == 1 and tags.tags.count("li") >= 2
    text = " ".join("".join(tags.text).split())
    assert f"cccccccccccc {TITLE} score 3.0: {REASON}; held by 1 of 2" in text
    assert "dddddddddddd score -3.0: documentation only" in text
    body = json.loads(render_json(page()))
    assert body["recent"][1]["ranked"][0] == {
        "revision": "c" * 40, "title": TITLE, "score": 3.0,
        "reasons": [REASON, "held by 1 of 2 other builders failing alike"],
    }  # fmt: skip
    assert body["recent"][0]["ranked"] == []


def test_the_metrics_view_shows_each_week_and_the_definitions():
    html = render_html(page())
    assert "<b>grace</b>" not in html and "reported wrong by &lt;b&gt;grace&lt;/b&gt;" in html
    cells = [t.strip() for t in parse(html).text if t.strip()]
    at = cells.index("2025-W48")
    assert cells[at : at + 8] == [
        "2025-W48", "from 2025-11-21 16:00 UTC", "4", "2", "1", "0", "1", "2"
    ]  # fmt: skip
    text = " ".join("".join(parse(html).text).split())
    assert "a revert reported wrong by a maintainer" in text
    assert "or merged and then relanded unchanged" in text
    assert "then reverted by a person: a commit on the branch titled Revert" in text
    body = json.loads(render_json(page()))
    assert body["metrics"] == [
        {"week": "2025-W48", "starts_at": "2025-11-21T16:00:00Z", "filed": 4, "merged": 2,
         "stood_down": 1, "closed": 0, "false_positives": 1, "false_negatives": 2}
    ]  # fmt: skip
    assert body["reverts"][0]["reported_wrong_by"] == "<b>grace</b>"


def test_the_page_has_every_section_and_the_mode_first():
    html = render_html(page())
    ids = ["mode", "red", "pending", "reverts", "metrics", "blind-spots", "flaky-cases", "recent"]
    positions = [html.index(f'id="{i}"') for i in ids]
    assert positions == sorted(positions)
    assert "<b>comment</b>" in html


def test_the_json_says_what_the_page_says():
    body = json.loads(render_json(page()))
    assert body["schema_version"] == 1
    assert body["status"]["mode"] == "comment"
    [red] = body["red"]
    assert (red["builder"], red["changes"][0]["title"]) == (BUILDER, TITLE)
    assert red["since"] == "2025-11-24T15:30:00Z"  # times as ISO 8601 UTC
    assert body["pending"][0]["due_at"] == "2025-11-24T16:59:00Z"
    assert body["reverts"][0]["revert_url"] == URL
    assert body["blind_spots"][0] == {
        "reason": "flaky-builder", "streaks": 4, "builders": 2, "red_hours": 12.5,
        "example": "flaky <u>example</u>",
    }  # fmt: skip
    # Every text the JSON holds is on the page (escaped there).
    text = "".join(parse(render_html(page())).text)
    for value in (red["builder"], red["explanation"], body["recent"][0]["explanation"]):
        assert value in text


def test_href_lets_only_web_addresses_through():
    assert href("https://x/y") == "https://x/y" and href("http://x") == "http://x"
    for bad in ("javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "", None):
        assert href(bad) == ""
    html = render_html(page(revert_url="javascript:alert(3)"))
    assert "javascript:alert(3)" not in parse(html).hrefs


def test_no_reporter_running_is_said_and_the_empty_sections_say_so():
    empty = Page(
        generated_at=NOW,
        status=Status("Other", False, summary="no reporter named 'Other' runs on this master"),
        red=(), pending=(), reverts=(), blind_spots=(), window_start=NOW - 30 * 86400,
        recent=(), html_url="http://m/x.html", json_url="http://m/x.json",
    )  # fmt: skip
    text = " ".join("".join(parse(render_html(empty)).text).split())
    assert "not running no reporter named 'Other' runs on this master" in text
    for said in ("No builder is red", "Nothing is waiting", "No revert was proposed",
                 "No red streak was declined", "No verdict yet",
                 "No revert pull request was filed in the last 12 weeks"):  # fmt: skip
        assert said in text
